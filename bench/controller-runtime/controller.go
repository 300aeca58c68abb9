// The Memcached reconcile of the operator-sdk tutorial, doing per reconcile the same work as
// Operless's controller (src/memcached/): a Deployment of spec.size replicas and a headless
// Service (both with a controller owner reference), the status — pod names, ready count and
// the Available / Progressing / Degraded conditions with observedGeneration — written only when
// it changed, the finalizer cache.example.com/finalizer, and the same Events.
//
// Reads go through the manager's informer cache (controller-runtime's default client), as a
// user's operator would; writes go to the API server. Children are created, and updated only
// when a field we set differs, so a no-op reconcile writes nothing.
package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

const (
	finalizerName = "cache.example.com/finalizer"
	portName      = "memcached"
	memcachedUID  = int64(11211)

	typeAvailable   = "Available"
	typeProgressing = "Progressing"
	typeDegraded    = "Degraded"
)

type memcachedReconciler struct {
	client.Client
	recorder record.EventRecorder
}

type specProblem struct{ reason, message string }

func (r *memcachedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &Memcached{}
	if err := r.Get(ctx, req.NamespacedName, mc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !mc.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(mc, finalizerName) {
			return ctrl.Result{}, nil
		}
		r.recorder.Eventf(mc, corev1.EventTypeNormal, "Finalizing",
			"Custom resource %s is being deleted from namespace %s: its Deployment and Service go with it", mc.Name, mc.Namespace)
		controllerutil.RemoveFinalizer(mc, finalizerName)
		return ctrl.Result{}, r.Update(ctx, mc)
	}
	if !controllerutil.ContainsFinalizer(mc, finalizerName) {
		controllerutil.AddFinalizer(mc, finalizerName)
		if err := r.Update(ctx, mc); err != nil {
			return ctrl.Result{}, err
		}
	}

	if p := checkSpec(mc.Spec); p != nil {
		return ctrl.Result{}, r.refuse(ctx, mc, p)
	}

	existing := &appsv1.Deployment{}
	err := r.Get(ctx, req.NamespacedName, existing)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if found {
		if owner := metav1.GetControllerOf(existing); owner != nil && owner.UID != mc.UID {
			if owner.Kind == "Memcached" && owner.Name == mc.Name {
				return ctrl.Result{}, fmt.Errorf("deployment %s still belongs to a deleted Memcached of the same name (uid %s); waiting for garbage collection", mc.Name, owner.UID)
			}
			return ctrl.Result{}, r.refuse(ctx, mc, &specProblem{"DeploymentConflict",
				fmt.Sprintf("Deployment %s already exists and is controlled by %s %s; rename the Memcached or delete that Deployment", mc.Name, owner.Kind, owner.Name)})
		}
	}

	deployment, err := r.ensureDeployment(ctx, mc, existing, found)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureService(ctx, mc); err != nil {
		return ctrl.Result{}, err
	}

	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(mc.Namespace), client.MatchingLabels(selectorLabels(mc))); err != nil {
		return ctrl.Result{}, err
	}
	before := mc.Status.DeepCopyStatus()
	wasDegraded := meta.FindStatusCondition(before.Conditions, typeDegraded)
	observe(mc, deployment, pods.Items)
	if !equality.Semantic.DeepEqual(before, mc.Status) {
		if err := r.Status().Update(ctx, mc); err != nil {
			return ctrl.Result{}, err
		}
	}
	if now := meta.FindStatusCondition(mc.Status.Conditions, typeDegraded); now != nil && (wasDegraded == nil || wasDegraded.Status != now.Status) {
		if now.Status == metav1.ConditionTrue {
			r.recorder.Event(mc, corev1.EventTypeWarning, "Degraded", now.Message)
		} else if wasDegraded != nil {
			r.recorder.Event(mc, corev1.EventTypeNormal, "Recovered", "memcached is no longer degraded")
		}
	}
	// The pods come from the informer cache, which may not yet have seen what the Deployment
	// already reports (its readyReplicas event can arrive first). Nothing else would trigger
	// this key again, so the stale read is retried shortly, as controller-runtime users do.
	if deployment != nil && deployment.Status.ReadyReplicas > mc.Status.ReadyReplicas {
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

// DeepCopyStatus returns a copy of the status (for the "only when changed" comparison).
func (in *MemcachedStatus) DeepCopyStatus() MemcachedStatus {
	var out MemcachedStatus
	in.deepCopyInto(&out)
	return out
}

// refuse reports a spec only a human can fix: Degraded=True with the reason, no retries.
func (r *memcachedReconciler) refuse(ctx context.Context, mc *Memcached, p *specProblem) error {
	before := mc.Status.DeepCopyStatus()
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: typeDegraded, Status: metav1.ConditionTrue, Reason: p.reason, Message: p.message, ObservedGeneration: mc.Generation})
	mc.Status.ObservedGeneration = mc.Generation
	if equality.Semantic.DeepEqual(before, mc.Status) {
		return nil
	}
	if was := meta.FindStatusCondition(before.Conditions, typeDegraded); was == nil || was.Status != metav1.ConditionTrue {
		r.recorder.Event(mc, corev1.EventTypeWarning, "Degraded", p.message)
	}
	return r.Status().Update(ctx, mc)
}

func checkSpec(spec MemcachedSpec) *specProblem {
	if spec.Resources == nil {
		return nil
	}
	itemBytes := resource.NewQuantity(int64(spec.MemoryLimitMB)<<20, resource.BinarySI)
	if limit, ok := spec.Resources.Limits[corev1.ResourceMemory]; ok && itemBytes.Cmp(limit) > 0 {
		return &specProblem{"MemoryLimitTooSmall", fmt.Sprintf(
			"spec.memoryLimitMB is %d MiB but the container memory limit spec.resources.limits.memory is %s: memcached would be OOM-killed when the cache fills. "+
				"Lower spec.memoryLimitMB or raise spec.resources.limits.memory (allow some headroom for connections).", spec.MemoryLimitMB, limit.String())}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		limit, hasLimit := spec.Resources.Limits[name]
		request, hasRequest := spec.Resources.Requests[name]
		if hasLimit && hasRequest && request.Cmp(limit) > 0 {
			return &specProblem{"RequestAboveLimit", fmt.Sprintf(
				"spec.resources.requests.%s (%s) is larger than spec.resources.limits.%s (%s); Kubernetes would refuse the pods. Make the request at most the limit.",
				name, request.String(), name, limit.String())}
		}
	}
	return nil
}

func selectorLabels(mc *Memcached) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": mc.Name}
}

func objectLabels(mc *Memcached) map[string]string {
	l := selectorLabels(mc)
	l["app.kubernetes.io/managed-by"] = "controller-runtime-memcached"
	l["app.kubernetes.io/component"] = "cache"
	return l
}

func memcachedArgs(mc *Memcached) []string {
	return []string{"-m", fmt.Sprint(mc.Spec.MemoryLimitMB), "-p", fmt.Sprint(mc.Spec.Port)}
}

func memcachedContainer(mc *Memcached) corev1.Container {
	yes, no := true, false
	uid := memcachedUID
	c := corev1.Container{
		Name:            "memcached",
		Image:           mc.Spec.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"memcached"},
		Args:            memcachedArgs(mc),
		Ports:           []corev1.ContainerPort{{Name: portName, ContainerPort: mc.Spec.Port, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(portName)}},
			PeriodSeconds: 5, FailureThreshold: 3},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(portName)}},
			InitialDelaySeconds: 10, PeriodSeconds: 10, FailureThreshold: 3},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if mc.Spec.Resources != nil {
		c.Resources = *mc.Spec.Resources.DeepCopy()
	}
	return c
}

func desiredDeployment(mc *Memcached) *appsv1.Deployment {
	replicas, history, no, yes := mc.Spec.Size, int32(3), false, true
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: mc.Name, Namespace: mc.Namespace, Labels: objectLabels(mc)},
		Spec: appsv1.DeploymentSpec{
			Replicas:             &replicas,
			RevisionHistoryLimit: &history,
			Selector:             &metav1.LabelSelector{MatchLabels: selectorLabels(mc)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: objectLabels(mc)},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: &no,
					EnableServiceLinks:           &no,
					SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers:                   []corev1.Container{memcachedContainer(mc)},
				},
			},
		},
	}
}

// ensureDeployment creates the Deployment, or updates the fields a spec change moves (replicas,
// image, args, port, resources) when they differ. Returns the live Deployment.
func (r *memcachedReconciler) ensureDeployment(ctx context.Context, mc *Memcached, existing *appsv1.Deployment, found bool) (*appsv1.Deployment, error) {
	if !found {
		d := desiredDeployment(mc)
		if err := ctrl.SetControllerReference(mc, d, r.Scheme()); err != nil {
			return nil, err
		}
		if err := r.Create(ctx, d); err != nil {
			return nil, err
		}
		r.recorder.Eventf(mc, corev1.EventTypeNormal, "Created", "Created Deployment and Service %s for %d memcached %s", mc.Name, mc.Spec.Size, nodesWord(mc.Spec.Size))
		return d, nil
	}
	want := memcachedContainer(mc)
	changed := false
	previous := int32(-1)
	if existing.Spec.Replicas == nil || *existing.Spec.Replicas != mc.Spec.Size {
		if existing.Spec.Replicas != nil {
			previous = *existing.Spec.Replicas
		}
		size := mc.Spec.Size
		existing.Spec.Replicas = &size
		changed = true
	}
	containers := existing.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		existing.Spec.Template.Spec.Containers = []corev1.Container{want}
		changed = true
	} else {
		c := &containers[0]
		if c.Image != want.Image || !equality.Semantic.DeepEqual(c.Args, want.Args) || !equality.Semantic.DeepEqual(c.Ports, want.Ports) ||
			(mc.Spec.Resources != nil && !equality.Semantic.DeepEqual(c.Resources, want.Resources)) {
			c.Image, c.Args, c.Ports = want.Image, want.Args, want.Ports
			if mc.Spec.Resources != nil {
				c.Resources = want.Resources
			}
			changed = true
		}
	}
	if !changed {
		return existing, nil
	}
	if err := r.Update(ctx, existing); err != nil {
		return nil, err
	}
	if previous >= 0 {
		r.recorder.Eventf(mc, corev1.EventTypeNormal, "Scaled", "Scaled memcached from %d to %d %s", previous, mc.Spec.Size, nodesWord(mc.Spec.Size))
	}
	return existing, nil
}

// ensureService creates the headless Service, or puts back its selector and port when they differ.
func (r *memcachedReconciler) ensureService(ctx context.Context, mc *Memcached) error {
	ports := []corev1.ServicePort{{Name: portName, Port: mc.Spec.Port, TargetPort: intstr.FromString(portName), Protocol: corev1.ProtocolTCP}}
	svc := &corev1.Service{}
	err := r.Get(ctx, client.ObjectKeyFromObject(mc), svc)
	if apierrors.IsNotFound(err) {
		svc = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: mc.Name, Namespace: mc.Namespace, Labels: objectLabels(mc)},
			Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: selectorLabels(mc), Ports: ports},
		}
		if err := ctrl.SetControllerReference(mc, svc, r.Scheme()); err != nil {
			return err
		}
		return r.Create(ctx, svc)
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(svc.Spec.Selector, selectorLabels(mc)) && equality.Semantic.DeepEqual(svc.Spec.Ports, ports) {
		return nil
	}
	svc.Spec.Selector, svc.Spec.Ports = selectorLabels(mc), ports
	return r.Update(ctx, svc)
}

// observe sets mc.Status from the Deployment and the pods (same rules as src/memcached/status.ts).
func observe(mc *Memcached, deployment *appsv1.Deployment, pods []corev1.Pod) {
	size := mc.Spec.Size
	var nodes []string
	ready := int32(0)
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		nodes = append(nodes, p.Name)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	sort.Strings(nodes)
	live := int32(len(nodes))
	settled := live == size && ready == size && deploymentSettled(deployment, size) != settledNo
	gen := mc.Generation
	set := func(t string, s metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: gen})
	}
	switch {
	case size == 0:
		set(typeAvailable, metav1.ConditionTrue, "ScaledToZero", "spec.size is 0: no memcached nodes are requested")
	case ready >= size:
		set(typeAvailable, metav1.ConditionTrue, "AllNodesReady", fmt.Sprintf("%d of %d %s ready", ready, size, nodesWord(size)))
	default:
		set(typeAvailable, metav1.ConditionFalse, "NodesNotReady", fmt.Sprintf("%d of %d %s ready", ready, size, nodesWord(size)))
	}
	switch {
	case settled:
		set(typeProgressing, metav1.ConditionFalse, "RolloutComplete", fmt.Sprintf("%d %s running the current spec", size, nodesWord(size)))
	case live < size:
		set(typeProgressing, metav1.ConditionTrue, "ScalingUp", fmt.Sprintf("%d of %d %s created", live, size, nodesWord(size)))
	case live > size:
		set(typeProgressing, metav1.ConditionTrue, "ScalingDown", fmt.Sprintf("%d %s running, %d requested", live, nodesWord(live), size))
	case ready < size:
		set(typeProgressing, metav1.ConditionTrue, "WaitingForReady", fmt.Sprintf("%d of %d %s ready", ready, size, nodesWord(size)))
	default:
		set(typeProgressing, metav1.ConditionTrue, "RollingUpdate", "the Deployment is rolling out the current spec")
	}
	if reason, message, stuck := deploymentProblem(deployment); stuck {
		set(typeDegraded, metav1.ConditionTrue, reason, message)
	} else {
		set(typeDegraded, metav1.ConditionFalse, "AsExpected", "no problems found")
	}
	mc.Status.Nodes = nodes
	mc.Status.ReadyReplicas = ready
	mc.Status.ObservedGeneration = gen
}

type settledness int

const (
	settledUnknown settledness = iota
	settledNo
	settledYes
)

// deploymentSettled: unknown while no Deployment controller has reported on it (the pods decide).
func deploymentSettled(d *appsv1.Deployment, size int32) settledness {
	if d == nil || d.Status.ObservedGeneration == 0 {
		return settledUnknown
	}
	replicas := size
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	s := d.Status
	if s.ObservedGeneration >= d.Generation && replicas == size && s.UpdatedReplicas == size && s.Replicas == size && s.AvailableReplicas == size {
		return settledYes
	}
	return settledNo
}

func deploymentProblem(d *appsv1.Deployment) (reason, message string, stuck bool) {
	if d == nil {
		return "", "", false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			why := c.Message
			if why == "" {
				why = c.Reason
			}
			return "ReplicaFailure", "Deployment cannot create pods: " + why, true
		}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return "ProgressDeadlineExceeded", "Deployment rollout is stuck: " + c.Message, true
		}
	}
	return "", "", false
}

func nodesWord(n int32) string {
	if n == 1 {
		return "node"
	}
	return "nodes"
}
