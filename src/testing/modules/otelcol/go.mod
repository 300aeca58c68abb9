// Wrapper module of the integration tests' OTLP receiver: a minimal OpenTelemetry Collector
// (main.go: OTLP receiver + file exporter). All collector modules at one release (v0.161.0,
// the newest at which the contrib file exporter is known to resolve on Go 1.26).
module example.invalid/operless/otelcol

go 1.26.6

require (
	github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v0.161.0
	go.opentelemetry.io/collector/otelcol v0.161.0
	go.opentelemetry.io/collector/receiver/otlpreceiver v0.161.0
)
