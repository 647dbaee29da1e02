//go:build !k8s1.33 && !k8s1.30

package dranodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices/dra"
)

// inMemoryName names a claim that exists only in the scheduler's memory
// until PreBind writes it: kube-scheduler's own name for the claims it
// allocates for extended resources, which its claim tracker accepts as
// pending without an object in the API. Not a valid object name.
const inMemoryName = "<extended-resources>"

// assumeWait bounds the wait for a created claim to reach the scheduler's
// claim informer, as kube-scheduler bounds it for its own claims.
const assumeWait = 2 * time.Minute

// Binding is one pod's claim, from Reserve (pending in the DRA manager's
// account) to PreBind (written: created, allocated, reserved for the pod,
// and named in the pod's status) or Unreserve (given back).
type Binding struct {
	claims fwk.ResourceClaimTracker
	client kubernetes.Interface
	claim  *dra.Claim
	// pendingUID is the UID the pending allocation is signalled under.
	pendingUID types.UID

	mu      sync.Mutex
	pending bool
	// written is the claim as the API server holds it, once created.
	written *resourceapi.ResourceClaim
}

// Reserve signals the claim's allocation as pending in the DRA manager's
// account: from now on kube-scheduler's allocator and the HAMi plugin's
// next cycles count its shares taken.
func Reserve(claims fwk.ResourceClaimTracker, client kubernetes.Interface, claim *dra.Claim) (*Binding, error) {
	b := &Binding{claims: claims, client: client, claim: claim, pendingUID: uuid.NewUUID()}
	pending := claim.Object.DeepCopy()
	pending.Name, pending.UID = inMemoryName, b.pendingUID
	if err := claims.SignalClaimPendingAllocation(b.pendingUID, pending); err != nil {
		return nil, fmt.Errorf("signal the pending allocation of the pod's claim: %w", err)
	}
	b.pending = true
	return b, nil
}

// Claim is the claim the binding writes.
func (b *Binding) Claim() *dra.Claim { return b.claim }

// Write creates the claim, waits until the scheduler's claim informer
// has it, stores its allocation and the pod's reservation (with
// kube-scheduler's delete-protection finalizer), moves it from pending to
// assumed in the account, and names it in the pod's status with each
// container's requests, which is what the kubelet reads to prepare it.
func (b *Binding) Write(ctx context.Context, pod *corev1.Pod) error {
	logger := klog.FromContext(ctx)
	obj := b.claim.Object.DeepCopy()
	obj.Status = resourceapi.ResourceClaimStatus{}
	created, err := b.client.ResourceV1().ResourceClaims(obj.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create the pod's ResourceClaim: %w", err)
	}
	b.mu.Lock()
	b.written = created
	b.mu.Unlock()
	logger.V(4).Info("ResourceClaim created", "pod", klog.KObj(pod), "claim", klog.KObj(created))
	b.waitInformer(ctx, created)

	updated := created.DeepCopy()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated.Status.Allocation = b.claim.Object.Status.Allocation.DeepCopy()
		updated.Status.Allocation.AllocationTimestamp = &metav1.Time{Time: time.Now()}
		updated.Status.ReservedFor = b.claim.Object.Status.ReservedFor
		got, err := b.client.ResourceV1().ResourceClaims(updated.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, getErr := b.client.ResourceV1().ResourceClaims(updated.Namespace).Get(ctx, updated.Name, metav1.GetOptions{}); getErr == nil {
				updated = fresh
			}
		}
		if err == nil {
			updated = got
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("allocate and reserve ResourceClaim %s for the pod: %w", created.Name, err)
	}
	b.mu.Lock()
	b.written = updated
	b.mu.Unlock()
	if err := b.claims.AssumeClaimAfterAPICall(updated); err != nil {
		logger.V(4).Info("Allocated claim not assumed; the informer will bring it", "claim", klog.KObj(updated), "err", err)
	}
	b.dropPending()
	return b.namePodClaim(ctx, pod, updated.Name)
}

// waitInformer waits (bounded) until the scheduler's claim informer has
// the created claim, so that the allocation stored next can be assumed
// in the account before the pending one is dropped; a claim the informer
// is slow to bring is counted pending a little longer, never twice.
func (b *Binding) waitInformer(ctx context.Context, created *resourceapi.ResourceClaim) {
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, assumeWait, true, func(context.Context) (bool, error) {
		_, err := b.claims.Get(created.Namespace, created.Name)
		return err == nil, nil
	})
}

// namePodClaim writes the pod's status.extendedResourceClaimStatus.
func (b *Binding) namePodClaim(ctx context.Context, pod *corev1.Pod, claimName string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status": map[string]any{"extendedResourceClaimStatus": corev1.PodExtendedResourceClaimStatus{
			RequestMappings: b.claim.Mappings, ResourceClaimName: claimName,
		}},
	})
	if err != nil {
		return err
	}
	_, err = b.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("name ResourceClaim %s in the pod's status: %w", claimName, err)
	}
	return nil
}

// dropPending removes the pending allocation from the account, once.
func (b *Binding) dropPending() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending {
		b.claims.MaybeRemoveClaimPendingAllocation(b.pendingUID, true)
		b.pending = false
	}
}

// Release gives the claim back: the pending allocation leaves the
// account, and a claim already written is deleted (its finalizer taken
// off first, as kube-scheduler does for its own). Idempotent.
func (b *Binding) Release(ctx context.Context) error {
	b.dropPending()
	b.mu.Lock()
	written := b.written
	b.written = nil
	b.mu.Unlock()
	if written == nil {
		return nil
	}
	b.claims.AssumedClaimRestore(written.Namespace, written.Name)
	return DeleteClaim(ctx, b.client, written.Namespace, written.Name, written.UID)
}

// DeleteClaim deletes a claim hami-scheduler wrote, after taking its
// delete-protection finalizer off; only the claim of that UID.
func DeleteClaim(ctx context.Context, client kubernetes.Interface, namespace, name string, uid types.UID) error {
	claims := client.ResourceV1().ResourceClaims(namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.UID != uid || !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
			return nil
		}
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == resourceapi.Finalizer })
		_, err = claims.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("take the finalizer off ResourceClaim %s/%s: %w", namespace, name, err)
	}
	err = claims.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("delete ResourceClaim %s/%s: %w", namespace, name, err)
	}
	return nil
}
