// Command otelcol is the smallest OpenTelemetry Collector the integration tests need: the OTLP
// receiver (gRPC and HTTP) and the file exporter (OTLP JSON lines), nothing else. It is what
// the collector's own builder (ocb) would generate for these two components, written by hand
// so that building it needs only the Go module proxy.
package main

import (
	"log"

	fileexporter "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	otlpreceiver "go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	otlp := otlpreceiver.NewFactory()
	file := fileexporter.NewFactory()
	return otelcol.Factories{
		Receivers:  map[component.Type]receiver.Factory{otlp.Type(): otlp},
		Exporters:  map[component.Type]exporter.Factory{file.Type(): file},
		Processors: map[component.Type]processor.Factory{},
		Extensions: map[component.Type]extension.Factory{},
		Connectors: map[component.Type]connector.Factory{},
		Telemetry:  otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "Operless test collector (OTLP receiver, file exporter)", Version: "operless-test"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			// Only files: the one provider is also the scheme of an unqualified ${...} (the config uses none).
			ResolverSettings: confmap.ResolverSettings{ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()}, DefaultScheme: "file"},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
