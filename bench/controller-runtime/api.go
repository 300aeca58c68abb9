// The Memcached API (cache.example.com/v1alpha1) as Go types, matching the CRD that Operless
// generates (infra/crds/memcacheds.cache.example.com.yaml). The API server applies the
// defaults (image, port, memoryLimitMB), so the operator reads them as given.
//
// DeepCopy is written by hand (what controller-gen would generate), since the benchmark's
// operator has no code generation step.
package main

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var groupVersion = schema.GroupVersion{Group: "cache.example.com", Version: "v1alpha1"}

// MemcachedSpec is the desired state of a memcached cluster.
type MemcachedSpec struct {
	Size          int32                        `json:"size"`
	Image         string                       `json:"image,omitempty"`
	Port          int32                        `json:"port,omitempty"`
	MemoryLimitMB int32                        `json:"memoryLimitMB,omitempty"`
	Resources     *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// MemcachedStatus is the observed state: pod names, ready count and conditions.
type MemcachedStatus struct {
	Nodes              []string           `json:"nodes,omitempty"`
	ReadyReplicas      int32              `json:"readyReplicas"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Memcached is the primary resource.
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MemcachedSpec   `json:"spec"`
	Status            MemcachedStatus `json:"status,omitempty"`
}

// MemcachedList is a list of Memcached.
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Memcached `json:"items"`
}

func addMemcachedTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(groupVersion, &Memcached{}, &MemcachedList{})
	metav1.AddToGroupVersion(scheme, groupVersion)
	return nil
}

func (in *MemcachedStatus) deepCopyInto(out *MemcachedStatus) {
	*out = *in
	if in.Nodes != nil {
		out.Nodes = append([]string(nil), in.Nodes...)
	}
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies the receiver into out.
func (in *Memcached) DeepCopyInto(out *Memcached) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	if in.Spec.Resources != nil {
		out.Spec.Resources = in.Spec.Resources.DeepCopy()
	}
	in.Status.deepCopyInto(&out.Status)
}

// DeepCopy returns a copy of the receiver.
func (in *Memcached) DeepCopy() *Memcached {
	if in == nil {
		return nil
	}
	out := new(Memcached)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Memcached) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (in *MemcachedList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(MemcachedList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Memcached, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
