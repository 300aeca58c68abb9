// The benchmark's anchor: the operator-sdk tutorial's Memcached operator on controller-runtime,
// run as its own process against the benchmark's control plane (bench/lib/controller-runtime.ts
// starts it). One controller, For(Memcached).Owns(Deployment).Owns(Service), with the manager's
// default cached client and MaxConcurrentReconciles workers, watching one namespace.
//
// Protocol with the benchmark, on stdout, one JSON object a line:
//
//	{"event":"metrics","address":"127.0.0.1:<port>"}  controller-runtime's metrics registry
//	                                                  (controller_runtime_reconcile_total, …) at /metrics
//	{"event":"ready"}                                 every informer (Memcached, Deployment, Service, Pod) synced
//
// The metrics listener takes a free port from the kernel (no fixed port). Flags: --namespace,
// --workers, --kube-api-qps, --kube-api-burst (unset: controller-runtime's default, no client-side
// rate limit — it relies on the API server's priority and fairness), --sync-period (the cache's
// periodic resync; unset: controller-runtime's default of 10 h); the cluster comes from $KUBECONFIG.
// SIGTERM/SIGINT stop the manager (workers finish their reconcile first).
//
// Bench hooks, on the same loopback listener, which leave the reconcile as it is (bench.go):
//
//	POST /bench/enqueue {"namespace":…,"names":[…]}  one GenericEvent per name through a source.Channel:
//	                                                  a reconcile of each, as an external trigger would ask
//	POST /bench/events?on=false|true                  closes or opens the gate on the informers' events
//	                                                  (a predicate on every For/Owns watch); the cache
//	                                                  stays live, only what enqueues stops. --paused starts closed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func say(fields map[string]string) {
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func main() {
	namespace := flag.String("namespace", "", "the one namespace to watch (empty: all)")
	workers := flag.Int("workers", 10, "MaxConcurrentReconciles")
	qps := flag.Float64("kube-api-qps", 0, "client-side rate limit (0: controller-runtime's default, none)")
	burst := flag.Int("kube-api-burst", 0, "client-side burst (0: the default)")
	syncPeriod := flag.Duration("sync-period", 0, "the cache's periodic resync (0: controller-runtime's default, 10 h)")
	paused := flag.Bool("paused", false, "start with the informers' events gated off (bench: reconciles only on /bench/enqueue)")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	hooks := newBenchHooks(*paused)
	if err := run(*namespace, *workers, float32(*qps), *burst, *syncPeriod, hooks); err != nil {
		fmt.Fprintf(os.Stderr, "memcached-operator: %v\n", err)
		os.Exit(1)
	}
}

func run(namespace string, workers int, qps float32, burst int, syncPeriod time.Duration, hooks *benchHooks) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := addMemcachedTypes(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	if qps > 0 {
		cfg.QPS = qps
	}
	if burst > 0 {
		cfg.Burst = burst
	}
	cacheOptions := cache.Options{}
	if syncPeriod > 0 {
		cacheOptions.SyncPeriod = &syncPeriod
	}
	if namespace != "" {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOptions,
		Metrics:                metricsserver.Options{BindAddress: "0"}, // served below, on a free port
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return err
	}
	r := &memcachedReconciler{Client: mgr.GetClient(), recorder: mgr.GetEventRecorderFor("memcached-controller")}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&Memcached{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Named("memcached").
		WithEventFilter(hooks.gate()).
		WatchesRawSource(hooks.source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r); err != nil {
		return err
	}

	ctx := ctrl.SetupSignalHandler()
	// The reconcile lists pods from the cache: create that informer now, so that "ready" means
	// every informer the reconcile reads has synced (not a lazy start on the first reconcile).
	for _, obj := range []client.Object{&Memcached{}, &appsv1.Deployment{}, &corev1.Service{}, &corev1.Pod{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	hooks.serve(mux)
	go func() { _ = http.Serve(listener, mux) }()
	say(map[string]string{"event": "metrics", "address": listener.Addr().String()})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			say(map[string]string{"event": "ready"})
		}
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
