package compat

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/kubeversion"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// A pod that names no scheduler and asks for a slice of a card is routed
// by the webhook to hami-scheduler, placed, and run by HAMi's device
// plugin; the card holds what it asked.
func TestFractionalPod(t *testing.T) {
	e := newEnv(t, "fractional", "1 node x 2 cards of NVIDIA A100 40 GiB, split 10")
	created := e.create(e.pod("p", gpu{cards: 1, memory: 4000, cores: 30}))
	if created.Spec.SchedulerName != profile.SchedulerName {
		t.Fatalf("webhook left schedulerName %q, want %q", created.Spec.SchedulerName, profile.SchedulerName)
	}
	p := e.waitRunning("p")
	if p.Annotations[nvidia.AllocatedAnnotation] == "" {
		t.Errorf("running pod has no %s: %v", nvidia.AllocatedAnnotation, p.Annotations)
	}
	var held []string
	for _, c := range e.checkAccounting() {
		if c.Used.Sharers > 0 {
			held = append(held, c.UUID)
			if c.Used.MemoryMiB != 4000 || c.Used.Cores != 30 {
				t.Errorf("card %s holds %d MiB and %d cores, want 4000 and 30", c.UUID, c.Used.MemoryMiB, c.Used.Cores)
			}
		}
	}
	if len(held) != 1 {
		t.Errorf("cards in use %v, want one", held)
	}
}

// A pod with two device containers gets a card for each, and HAMi's
// device plugin serves both containers under one node lock.
func TestTwoContainerPod(t *testing.T) {
	e := newEnv(t, "two-containers", "1 node x 2 cards of NVIDIA A100 40 GiB, split 10")
	e.create(e.pod("p", gpu{cards: 1, memory: 10000}, gpu{cards: 1, memory: 20000}))
	e.waitRunning("p")
	memory := map[int32]int{}
	for _, c := range e.checkAccounting() {
		for _, h := range c.Holders {
			memory[h.MemoryMiB]++
		}
	}
	if memory[10000] != 1 || memory[20000] != 1 {
		t.Errorf("grants by memory %v, want one of 10000 MiB and one of 20000 MiB", memory)
	}
}

// A pod that does not fit waits with a FailedScheduling event, and runs
// once the pod holding the card is deleted (the deletion requeues it).
func TestDeletionRequeues(t *testing.T) {
	e := newEnv(t, "requeue", "1 node x 1 card of NVIDIA A100 40 GiB, split 10")
	e.create(e.pod("holder", gpu{cards: 1, memory: 30000}))
	e.waitRunning("holder")
	e.create(e.pod("waiter", gpu{cards: 1, memory: 20000}))
	if message := e.waitUnschedulable("waiter"); !strings.Contains(message, "insufficient memory") {
		t.Errorf("FailedScheduling says %q, want insufficient memory", message)
	}
	if err := controlPlane.Client.CoreV1().Pods(e.ns).Delete(t.Context(), "holder", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	e.waitRunning("waiter")
	e.checkAccounting()
}

// The shipped ValidatingAdmissionPolicy, where the API server serves
// admissionregistration.k8s.io/v1 policies (1.30 and later), refuses a
// tenant's forged assignment with the policy's message; the tenant is a
// real user whom RBAC lets create pods in its namespace.
func TestTenantCannotForgeAnAssignment(t *testing.T) {
	e := newEnv(t, "forgery", "1 node x 1 card of NVIDIA A100 40 GiB, split 10")
	if !servesAdmissionPolicies(t) {
		t.Skipf("API server %s serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (1.30 and later); the chart leaves the policy out there", serverVersion)
	}
	applyAdmissionPolicy(t)
	tenant := tenantClient(t, e.ns)
	forged := func() *corev1.Pod {
		p := e.pod("forged", gpu{cards: 1, memory: 1000})
		p.Annotations = map[string]string{
			nvidia.AllocatedAnnotation: simnode.CardUUID(e.ns+"-0", 0) + ",NVIDIA,1000,0:;",
			devices.AssignedNode:       e.ns + "-0",
		}
		return p
	}
	// The policy is loaded asynchronously.
	var refused error
	e.eventually("the policy refuses the tenant's forged pod", func() (bool, string) {
		_, err := tenant.CoreV1().Pods(e.ns).Create(t.Context(), forged(), metav1.CreateOptions{})
		if err == nil {
			_ = controlPlane.Client.CoreV1().Pods(e.ns).Delete(t.Context(), "forged", metav1.DeleteOptions{})
			return false, "created"
		}
		refused = err
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), err.Error()
	})
	if !strings.Contains(refused.Error(), "only hami-scheduler and the device plugin may set or change") {
		t.Errorf("refusal %q is not the policy's message", refused)
	}
	// The same tenant may create the pod without forged annotations.
	if _, err := tenant.CoreV1().Pods(e.ns).Create(t.Context(), e.pod("honest", gpu{cards: 1, memory: 1000}), metav1.CreateOptions{}); err != nil {
		t.Errorf("tenant's honest pod refused: %v", err)
	}
	e.waitRunning("honest")
}

// servesAdmissionPolicies reports whether the API server serves
// ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1.
func servesAdmissionPolicies(t *testing.T) bool {
	t.Helper()
	resources, err := controlPlane.Client.Discovery().ServerResourcesForGroupVersion(admissionv1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources.APIResources {
		if r.Kind == "ValidatingAdmissionPolicy" {
			return true
		}
	}
	return false
}

// applyAdmissionPolicy creates the objects of manifests/admission-policy.yaml
// for the test's duration.
func applyAdmissionPolicy(t *testing.T) {
	t.Helper()
	remove, err := localcluster.ApplyAdmissionPolicy(t.Context(), controlPlane.Client)
	t.Cleanup(remove)
	if err != nil {
		t.Fatal(err)
	}
}

// tenantClient is the control plane's tenant user, granted by RBAC what a
// namespace's user has over pods, in ns only.
func tenantClient(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	rbac := controlPlane.Client.RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-user", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}}
	if _, err := rbac.Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-user", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controlPlane.TenantUser}},
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(controlPlane.TenantConfig)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC is enforced: the tenant may not list nodes.
	if _, err := client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("tenant lists nodes: err %v, want Forbidden (is RBAC on?)", err)
	}
	return client
}

// Against an API server outside its range, hami-scheduler exits at start
// with an error naming the server's version and the range it serves.
func TestRefusesAnUnservedAPIServer(t *testing.T) {
	if controlPlane == nil {
		t.Skip("no -kube-apiserver and -bin: run make test-compat")
	}
	if !wantRefusal {
		t.Skipf("a band serves Kubernetes %s", serverVersion)
	}
	if refusal.exitErr == nil {
		t.Fatalf("hami-scheduler exited 0:\n%s", refusal.output)
	}
	t.Logf("refused: %s", refusalLine(refusal.output))
	for _, want := range []string{"the API server is Kubernetes v" + serverVersion.String(), "serves API servers"} {
		if !strings.Contains(refusal.output, want) {
			t.Errorf("output does not say %q:\n%s", want, tail(refusal.output))
		}
	}
}

// refusalLine is the line of the output that says why.
func refusalLine(output string) string {
	for _, line := range strings.Split(output, "\n") {
		if strings.Contains(line, "serves API servers") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

// The chart, rendered for this API server's own capabilities as helm
// install renders it, installs (server-side dry run, with Pod Security
// restricted on the release namespace) with the image of the band that
// serves the server's minor, and only with objects the server serves.
func TestChartInstalls(t *testing.T) {
	if controlPlane == nil {
		t.Skip("no -kube-apiserver and -bin: run make test-compat")
	}
	caps, err := manifestgen.ServerCapabilities(controlPlane.Client.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	if wantRefusal {
		// No band serves the server: the chart's kubeVersion refuses it,
		// as helm install would.
		_, err := manifestgen.RenderFor(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), "hami-chart", nil, caps)
		if err == nil || !strings.Contains(err.Error(), "incompatible with Kubernetes "+caps.KubeVersion.Version) {
			t.Fatalf("render for %s: error %v, want the kubeVersion refusal", caps.KubeVersion.Version, err)
		}
		return
	}
	const ns = "hami-chart"
	if _, err := controlPlane.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "hami.io/webhook": "ignore"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rendered, err := manifestgen.RenderFor(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), ns, nil, caps)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifestgen.Decode(manifestgen.Documents(rendered))
	if err != nil {
		t.Fatal(err)
	}
	band, _ := kubeversion.BandFor(int(serverVersion.Minor()))
	wantTag := band.Tag("")
	policy := false
	for _, o := range objs {
		policy = policy || o.GetKind() == "ValidatingAdmissionPolicy"
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			image, _ := c.(map[string]any)["image"].(string)
			if !strings.HasSuffix(image, wantTag) {
				t.Errorf("%s runs image %s, want the tag ending %s", manifestgen.ObjectKey(o), image, wantTag)
			}
		}
	}
	if policy != servesAdmissionPolicies(t) {
		t.Errorf("admission policy rendered %v, but the server serves it: %v", policy, !policy)
	}
	errs, err := manifestgen.ApplyDryRun(t.Context(), controlPlane.Config, objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		t.Error(err)
	}
}

// Where an older band serves the API server, the newest build refuses it
// at start and names that band's build.
func TestNewestBuildNamesTheBand(t *testing.T) {
	needsCluster(t)
	band, _ := kubeversion.BandFor(int(serverVersion.Minor()))
	if band == kubeversion.Bands[0] {
		t.Skipf("the newest band serves Kubernetes %s", serverVersion)
	}
	exitErr, output, err := controlPlane.RunSchedulerProcess(t.Context(), filepath.Join(*binDir, "hami-scheduler"), localcluster.SchedulerProcessOptions{}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("refused: %s", refusalLine(output))
	want := fmt.Sprintf("run the build for Kubernetes 1.%d (image tag", band.Minor)
	if exitErr == nil || !strings.Contains(output, want) {
		t.Errorf("exit %v, output does not say %q:\n%s", exitErr, want, tail(output))
	}
}

// A scheduler-plugins PodGroup (the chart's CRD) is placed all together or
// not at all by the Coscheduling plugin of the band's build: three members
// whose devices cannot fit together place none; two that can run.
func TestGang(t *testing.T) {
	e := newEnv(t, "gang", "2 nodes x 1 card of NVIDIA A100 40 GiB, split 10")
	client, err := dynamic.NewForConfig(controlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups := client.Resource(v1alpha1.Resource).Namespace(e.ns)
	gang := func(name string, members int) []string {
		pg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": e.ns},
			"spec":     map[string]any{"minMember": int64(members)},
		}}
		if _, err := groups.Create(t.Context(), pg, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create PodGroup %s: %v", name, err)
		}
		var names []string
		for i := range members {
			p := e.pod(fmt.Sprintf("%s-%d", name, i), gpu{cards: 1, memory: 30000})
			p.Labels = map[string]string{v1alpha1.PodGroupLabel: name}
			e.create(p)
			names = append(names, p.Name)
		}
		return names
	}
	three := gang("three", 3)
	e.eventually("FailedScheduling says the group's devices do not fit together", func() (bool, string) {
		list, err := controlPlane.Client.CoreV1().Events(e.ns).List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + three[0] + ",reason=FailedScheduling",
		})
		if err != nil {
			return false, err.Error()
		}
		var messages []string
		for _, ev := range list.Items {
			if strings.Contains(ev.Message, "cannot place its members' devices together") {
				return true, ""
			}
			messages = append(messages, ev.Message)
		}
		return false, strings.Join(messages, "; ")
	})
	two := gang("two", 2)
	for _, n := range two {
		e.waitRunning(n)
	}
	for _, n := range three {
		p, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(t.Context(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Errorf("member %s of the group that cannot fit is bound to %s", n, p.Spec.NodeName)
		}
	}
	e.checkAccounting()
	e.eventually("PodGroup two Running", func() (bool, string) {
		u, err := groups.Get(t.Context(), "two", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == string(v1alpha1.PodGroupRunning), phase
	})
}
