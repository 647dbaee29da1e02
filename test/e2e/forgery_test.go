package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// The shipped ValidatingAdmissionPolicy keeps a tenant, even one whose RBAC
// lets it patch pods and nodes, from forging scheduling annotations or the
// node lock, while the scheduler's service account and admins may.
func TestTenantsCannotForgeSchedulingState(t *testing.T) {
	e := newEnv(t, "forgery")
	node := e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10", nil)[0].Name
	applyAdmissionPolicy(t, e)
	tenant := impersonate(t, e, "e2e-tenant")
	scheduler := impersonate(t, e, "system:serviceaccount:hami-system:hami-scheduler")

	forged := func(name string) *corev1.Pod {
		p := e.pod(name, gpu{cards: 1, memory: 1000})
		p.Spec.SchedulerName = "some-other-scheduler"
		p.Annotations = map[string]string{
			nvidia.AllocatedAnnotation: simnode.CardUUID(node, 0) + ",NVIDIA,1000,0:;",
			devices.AssignedNode:       node,
		}
		return p
	}
	// Wait until the policy is in force (it is loaded asynchronously).
	e.eventually("the admission policy denies a forged assignment", func() (bool, string) {
		_, err := tenant.CoreV1().Pods(e.ns).Create(e.ctx, forged("probe"), metav1.CreateOptions{})
		if err == nil {
			_ = controlPlane.Client.CoreV1().Pods(e.ns).Delete(e.ctx, "probe", metav1.DeleteOptions{})
			return false, "created"
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), err.Error()
	})

	lockPatch := []byte(`{"metadata":{"annotations":{"hami.io/mutex.lock":"` + time.Now().UTC().Format(time.RFC3339) + `,x,y"}}}`)
	tests := []struct {
		name    string
		do      func(c kubernetes.Interface) error
		client  kubernetes.Interface
		allowed bool
	}{
		{"tenant creates a pod with a forged assignment, naming another scheduler", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods(e.ns).Create(e.ctx, forged("forged"), metav1.CreateOptions{})
			return err
		}, tenant, false},
		{"tenant creates a pod with a forged assignment and nodeName", func(c kubernetes.Interface) error {
			p := forged("forged-bound")
			p.Spec.NodeName = node
			_, err := c.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
			return err
		}, tenant, false},
		{"tenant sets a placement preference", func(c kubernetes.Interface) error {
			p := e.pod("preference", gpu{cards: 1, memory: 1000})
			p.Annotations = map[string]string{devices.CardPolicyAnnotation: "binpack"}
			_, err := c.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
			return err
		}, tenant, true},
		{"tenant takes the node lock", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, lockPatch, metav1.PatchOptions{})
			return err
		}, tenant, false},
		{"tenant rewrites the node's register", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+nvidia.RegisterAnnotation+`":"[]"}}}`), metav1.PatchOptions{})
			return err
		}, tenant, false},
		{"tenant labels its node otherwise", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{})
			return err
		}, tenant, true},
		{"scheduler's service account takes the node lock", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, lockPatch, metav1.PatchOptions{})
			return err
		}, scheduler, true},
		{"scheduler's service account releases it", func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, []byte(`{"metadata":{"annotations":{"hami.io/mutex.lock":null}}}`), metav1.PatchOptions{})
			return err
		}, scheduler, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(tt.client)
			switch {
			case tt.allowed && err != nil:
				t.Errorf("refused: %v", err)
			case !tt.allowed && err == nil:
				t.Errorf("allowed; want the admission policy to refuse it")
			case !tt.allowed && !strings.Contains(err.Error(), "only hami-scheduler and the device plugin"):
				t.Errorf("refused for another reason: %v", err)
			}
		})
	}
}

// applyAdmissionPolicy creates the objects of manifests/admission-policy.yaml
// for the test's duration.
func applyAdmissionPolicy(t *testing.T, e *env) {
	t.Helper()
	remove, err := localcluster.ApplyAdmissionPolicy(e.ctx, controlPlane.Client)
	t.Cleanup(remove)
	if err != nil {
		t.Fatal(err)
	}
}

// impersonate returns a client acting as user, with RBAC to create and
// patch pods and nodes, so that only the admission policy can refuse it.
func impersonate(t *testing.T, e *env, user string) kubernetes.Interface {
	t.Helper()
	name := "e2e-" + strings.NewReplacer(":", "-").Replace(user)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"},
	}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	rbac := controlPlane.Client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(e.ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(e.ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(controlPlane.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
