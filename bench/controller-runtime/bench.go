// Bench hooks: what the benchmark needs to drive the operator the way it drives Operless, with
// the tutorial's reconcile left as it is.
//
//   - an external trigger: a source.Channel of GenericEvents (controller-runtime's own way to
//     enqueue from outside the cluster), fed by POST /bench/enqueue — one reconcile request per
//     name, de-duplicated by the work queue as any event;
//   - a gate on the informers' events: a predicate on every For/Owns watch (WithEventFilter; a raw
//     source such as the channel gets no global predicate), closed by POST /bench/events?on=false.
//     Closed, the informers still list, watch and fill the cache the reconcile reads (that is how
//     a cached controller reads), but no watch event and no periodic resync enqueues anything.
//
// Both are served on the loopback metrics listener; nothing else listens.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

type benchHooks struct {
	events  chan event.GenericEvent
	blocked atomic.Bool
}

func newBenchHooks(paused bool) *benchHooks {
	h := &benchHooks{events: make(chan event.GenericEvent, 1024)}
	h.blocked.Store(paused)
	return h
}

// gate passes the informers' events unless blocked.
func (h *benchHooks) gate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(client.Object) bool { return !h.blocked.Load() })
}

// source is the channel the enqueue endpoint writes to.
func (h *benchHooks) source() source.Source {
	return source.Channel(h.events, &handler.EnqueueRequestForObject{})
}

type enqueueBody struct {
	Namespace string   `json:"namespace"`
	Names     []string `json:"names"`
}

func (h *benchHooks) serve(mux *http.ServeMux) {
	mux.HandleFunc("/bench/enqueue", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		var body enqueueBody
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || body.Namespace == "" {
			http.Error(w, fmt.Sprintf(`expected {"namespace":"…","names":["…"]}: %v`, err), http.StatusBadRequest)
			return
		}
		for _, name := range body.Names {
			select {
			case h.events <- event.GenericEvent{Object: &Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: body.Namespace, Name: name}}}:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/bench/events", func(w http.ResponseWriter, r *http.Request) {
		on := r.URL.Query().Get("on")
		if r.Method != http.MethodPost || (on != "true" && on != "false") {
			http.Error(w, "POST /bench/events?on=true|false", http.StatusBadRequest)
			return
		}
		h.blocked.Store(on == "false")
		w.WriteHeader(http.StatusNoContent)
	})
}
