package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/test/util/release"
)

// waitLimit bounds each wait; a leader takeover waits out the shipped
// lease (15 s) at worst.
const waitLimit = 60 * time.Second

// valueSets are the chart values the release runs with.
var valueSets = []struct {
	name          string
	values        map[string]any
	schedulerName string
	// vendorSource is where the schedulers read their vendors from, as
	// they log it.
	vendorSource string
}{
	{name: "defaults", schedulerName: "hami-scheduler", vendorSource: `source="vendors"`},
	{name: "custom-scheduler-name", values: map[string]any{"schedulerName": "gpu-scheduler"}, schedulerName: "gpu-scheduler", vendorSource: `source="vendors"`},
	// HAMi's device-config.yaml as the chart's ConfigMap, mounted into
	// both binaries.
	{name: "device-config", values: map[string]any{"deviceConfig": map[string]any{"content": deviceConfig()}}, schedulerName: "hami-scheduler",
		vendorSource: `source="deviceConfigFile `},
	// A HAMi v2.10 user's values (HAMi's keys, a few overrides): HAMi's
	// chart-default device config with them applied, every vendor.
	{name: "hami-values", values: hamiValues(), schedulerName: "hami-scheduler", vendorSource: `source="deviceConfigFile `},
}

// hamiValues are test/testdata/hami-values.yaml.
func hamiValues() map[string]any {
	values, err := manifestgen.ReadValues(filepath.Join(manifestgen.RepoRoot(), manifestgen.HAMiValuesFile))
	if err != nil {
		panic(err)
	}
	return values
}

// deviceConfig is HAMi v2.10's chart-default device-config.yaml.
func deviceConfig() string {
	data, err := os.ReadFile(filepath.Join(manifestgen.RepoRoot(), "test", "testdata", "device-config.yaml"))
	if err != nil {
		panic(err)
	}
	return string(data)
}

// For each value set, on the installed release: a fractional pod and a
// multi-card pod run with their cards; a pod that cannot fit runs once
// the pods holding the cards are deleted; the scheduler's metrics Service
// serves every series HAMi's dashboard and the chart's query; when the
// leading scheduler stops, the other replica takes over and schedules; a
// tenant with namespaced pod rights cannot forge HAMi's annotations; and
// the audit log shows no request of the scheduler or the webhook refused.
func TestRelease(t *testing.T) {
	if controlPlane == nil {
		t.Skip("no control plane: the test binary is not stamped with a Kubernetes release (make test-unit stamps it)")
	}
	for i, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			since := time.Now()
			r, err := release.Install(ctx, controlPlane, release.Options{
				Values: vs.values, Scheduler: binDir + "/hami-scheduler", Webhook: binDir + "/hami-webhook",
				Dir: t.TempDir(), Log: logFile,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Uninstall()
			for _, s := range r.Schedulers {
				if !strings.Contains(s.Output(), vs.vendorSource) {
					t.Errorf("a scheduler replica did not read its vendors from %s:\n%s", vs.vendorSource, s.Output())
				}
			}
			e := newEnv(ctx, t, fmt.Sprintf("release-%d", i))
			e.addNodes("2 nodes x 4 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 10")

			frac := e.create(e.pod("fractional", 1, 2000, 0))
			multi := e.create(e.pod("multi-card", 2, 4000, 0))
			for _, p := range []*corev1.Pod{frac, multi} {
				if p.Spec.SchedulerName != vs.schedulerName {
					t.Errorf("pod %s: schedulerName %q after admission, want %s", p.Name, p.Spec.SchedulerName, vs.schedulerName)
				}
				got := e.waitRunning(p.Name)
				if _, ok := got.Annotations[devices.AssignmentRecord]; !ok {
					t.Errorf("pod %s runs without its device assignment", p.Name)
				}
			}
			// Whole-node pods: one takes the node the others left free,
			// the second waits until they are deleted.
			e.create(e.pod("whole-1", 4, 0, 100))
			e.waitRunning("whole-1")
			e.create(e.pod("whole-2", 4, 0, 100))
			e.waitPendingUnschedulable("whole-2")
			e.delete(frac.Name)
			e.delete(multi.Name)
			e.waitRunning("whole-2")

			e.delete("whole-1")
			e.delete("whole-2")
			quotaNamespace(e)
			gang(e)
			preemption(e)
			nodeUpdate(e)
			certificateRotation(e, r)
			scrapeMetrics(e, r)
			leaderFailover(e, r)
			tenantCannotForge(e)
			checkNoForbidden(t, r.Namespace, since)
			if vs.name == "defaults" {
				checkEveryGrantUsed(t, r, since)
			}
		})
	}
}

// gang: a scheduler-plugins PodGroup (the chart's CRD) of ten members, the
// last of which asks for a node label no node has yet: the nine others are
// placed and wait for it (one member missing is within
// podGroupRejectPercentage), their cards published on the PodGroup; once
// a node has the label, the ten run together, the PodGroup's status says
// Running and the published cards are gone.
func gang(e *env) {
	e.t.Helper()
	client, err := dynamic.NewForConfig(controlPlane.Config)
	if err != nil {
		e.t.Fatal(err)
	}
	groups := client.Resource(v1alpha1.Resource).Namespace(e.ns)
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": "gang", "namespace": e.ns},
		"spec":     map[string]any{"minMember": int64(10), "scheduleTimeoutSeconds": int64(120)},
	}}
	if _, err := groups.Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for i := range 10 {
		p := e.pod(fmt.Sprintf("gang-%d", i), 1, 3000, 0)
		p.Labels = map[string]string{v1alpha1.PodGroupLabel: "gang"}
		if i == 9 {
			p.Spec.NodeSelector["gang.hami.io/last"] = "yes"
		}
		e.create(p)
		names = append(names, p.Name)
	}
	e.eventually("the waiting members' cards published on the PodGroup", func() (bool, string) {
		u, err := groups.Get(e.ctx, "gang", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		value, ok := u.GetAnnotations()[devices.GangReservationsAnnotation]
		return ok, value
	})
	node := e.group + "-0"
	patch := []byte(`{"metadata":{"labels":{"gang.hami.io/last":"yes"}}}`)
	if _, err := controlPlane.Client.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	for _, n := range names {
		e.waitRunning(n)
	}
	e.eventually("PodGroup gang Running", func() (bool, string) {
		u, err := groups.Get(e.ctx, "gang", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		_, reserved := u.GetAnnotations()[devices.GangReservationsAnnotation]
		return phase == "Running" && !reserved, fmt.Sprintf("phase %q, reservations still published: %t", phase, reserved)
	})
	for _, n := range names {
		e.delete(n)
	}
}

// quotaNamespace: in a namespace whose ResourceQuota caps device memory,
// a pod within the cap runs and the webhook (reading the quota with its
// own rights) refuses one that would exceed it.
func quotaNamespace(e *env) {
	e.t.Helper()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "devices"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpumem": *resource.NewQuantity(3000, resource.DecimalSI)}},
	}
	if _, err := controlPlane.Client.CoreV1().ResourceQuotas(e.ns).Create(e.ctx, quota, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	defer func() {
		_ = controlPlane.Client.CoreV1().ResourceQuotas(e.ns).Delete(e.ctx, quota.Name, metav1.DeleteOptions{})
	}()
	e.create(e.pod("within-quota", 1, 2000, 0))
	e.waitRunning("within-quota")
	var err error
	e.eventually("the webhook refusing a pod over the quota", func() (bool, string) {
		_, err = controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, e.pod("over-quota", 1, 2000, 0), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "quota"), fmt.Sprint(err)
	})
	e.delete("within-quota")
}

// preemption: a high-priority pod that needs the cards of a low-priority
// one gets them; the scheduler evicts the victim with its own rights.
func preemption(e *env) {
	e.t.Helper()
	for name, value := range map[string]int32{"release-low": 100, "release-high": 100000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := controlPlane.Client.SchedulingV1().PriorityClasses().Create(e.ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			e.t.Fatal(err)
		}
	}
	// The Priority admission plugin learns of new classes from its
	// informer: retry until it knows them.
	createWithPriority := func(p *corev1.Pod) {
		e.eventually("pod "+p.Name+" created with priority class "+p.Spec.PriorityClassName, func() (bool, string) {
			_, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
			if err != nil && !strings.Contains(err.Error(), "no PriorityClass with name") {
				e.t.Fatalf("create %s: %v", p.Name, err)
			}
			return err == nil, fmt.Sprint(err)
		})
	}
	var low []string
	for i := range 2 {
		p := e.pod(fmt.Sprintf("low-%d", i), 4, 0, 100)
		p.Spec.PriorityClassName = "release-low"
		createWithPriority(p)
		e.waitRunning(p.Name)
		low = append(low, p.Name)
	}
	high := e.pod("high", 4, 0, 100)
	high.Spec.PriorityClassName = "release-high"
	createWithPriority(high)
	e.waitRunning("high")
	gone := 0
	for _, name := range low {
		if _, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			gone++
		} else {
			e.delete(name)
		}
	}
	if gone != 1 {
		e.t.Errorf("%d low-priority pods preempted, want 1", gone)
	}
	e.delete("high")
}

// nodeUpdate: a pod that no card fits while the node's cards are cordoned
// (hami.io/device-cordon) runs once the node is updated without the
// cordon.
func nodeUpdate(e *env) {
	e.t.Helper()
	nodes, err := controlPlane.Client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{LabelSelector: "e2e.hami.io/group=" + e.group})
	if err != nil {
		e.t.Fatal(err)
	}
	cordon := func(n *corev1.Node, value string) {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, devices.DeviceCordon, value)
		if _, err := controlPlane.Client.CoreV1().Nodes().Patch(e.ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	for i := range nodes.Items {
		var uuids []string
		for c := range 4 {
			uuids = append(uuids, simnode.CardUUID(nodes.Items[i].Name, c))
		}
		cordon(&nodes.Items[i], `"`+strings.Join(uuids, ",")+`"`)
	}
	name := e.createUnschedulable(func(attempt int) *corev1.Pod {
		return e.pod(fmt.Sprintf("after-update-%d", attempt), 1, 1000, 0)
	})
	for i := range nodes.Items {
		cordon(&nodes.Items[i], "null")
	}
	e.waitRunning(name)
	e.delete(name)
}

// createUnschedulable creates the pod and waits for the scheduler to mark
// it unschedulable, after a change to the nodes that should leave it no
// place. The scheduler hears of that change from its node informer, apart
// from the pod's: a pod created right after the change may be placed
// before the scheduler has seen it. Such a pod is deleted and the next
// attempt's pod created, until one is found unschedulable (a scheduler
// that never sees the change fails the wait). It returns that pod's name.
func (e *env) createUnschedulable(next func(attempt int) *corev1.Pod) string {
	e.t.Helper()
	var name string
	attempt := 0
	e.eventually("a pod found unschedulable", func() (bool, string) {
		if name == "" {
			name = e.create(next(attempt)).Name
			attempt++
		}
		p, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != "" {
			e.t.Logf("pod %s placed on %s before the scheduler saw the nodes change; trying another", name, p.Spec.NodeName)
			e.delete(name)
			name = ""
			return false, "placed on " + p.Spec.NodeName
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, c.Message
			}
		}
		return false, fmt.Sprintf("conditions %v", p.Status.Conditions)
	})
	return name
}

// certificateRotation: the webhook issued its own CA and certificate into
// the Secret the chart creates empty (the API server reaches it through
// them); when the Secret loses them, the webhook issues new ones, the
// mounted files follow, the MutatingWebhookConfiguration's caBundle is
// updated, and the API server still sends pods to the webhook.
func certificateRotation(e *env, r *release.Release) {
	e.t.Helper()
	secrets := controlPlane.Client.CoreV1().Secrets(r.Namespace)
	secret, err := secrets.Get(e.ctx, "hami-webhook-tls", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	oldCA := string(secret.Data["ca.crt"])
	if oldCA == "" || len(secret.Data["tls.crt"]) == 0 {
		e.t.Fatalf("the webhook issued no certificate into its Secret: keys %v", keys(secret.Data))
	}
	secret.Data = nil
	if _, err := secrets.Update(e.ctx, secret, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually("a new CA in the Secret and the webhook configuration", func() (bool, string) {
		s, err := secrets.Get(e.ctx, "hami-webhook-tls", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ca := string(s.Data["ca.crt"])
		mwc, err := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(e.ctx, "hami-webhook", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ca != "" && ca != oldCA && string(mwc.Webhooks[0].ClientConfig.CABundle) == ca, "waiting"
	})
	e.eventually("a device pod still mutated", func() (bool, string) {
		p, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, e.pod("after-rotation", 1, 1000, 0), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.SchedulerName != corev1.DefaultSchedulerName, p.Spec.SchedulerName
	})
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// leaderFailover stops the replica that acquired the lease (client-go's
// leader election logs it) and checks that the other takes over and
// schedules the next pod.
func leaderFailover(e *env, r *release.Release) {
	e.t.Helper()
	var leader *localcluster.SchedulerProcess
	e.eventually("a scheduler replica leading", func() (bool, string) {
		leader = nil
		for _, s := range r.Schedulers {
			if strings.Contains(strings.ToLower(s.Output()), "successfully acquired lease") {
				leader = s
			}
		}
		return leader != nil, fmt.Sprintf("%d replicas, none acquired the lease", len(r.Schedulers))
	})
	leader.Stop()
	e.create(e.pod("after-failover", 1, 1000, 0))
	e.waitRunning("after-failover")
	for _, s := range r.Schedulers {
		if s != leader && !strings.Contains(strings.ToLower(s.Output()), "successfully acquired lease") {
			e.t.Errorf("the standby replica did not take the lease over")
		}
	}
}

// tenantCannotForge: a user with rights on pods in one namespace only
// cannot create a pod carrying HAMi's assignment annotations, nor one that
// names a node to skip the scheduler and the webhook's routing with them:
// the shipped ValidatingAdmissionPolicy refuses with its message.
func tenantCannotForge(e *env) {
	e.t.Helper()
	ns := e.ns
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "update", "patch", "get", "list", "delete"}},
	}}
	if _, err := controlPlane.Client.RbacV1().Roles(ns).Create(e.ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pods"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: controlPlane.TenantUser}},
	}
	if _, err := controlPlane.Client.RbacV1().RoleBindings(ns).Create(e.ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	tenant, err := kubernetes.NewForConfig(controlPlane.TenantConfig)
	if err != nil {
		e.t.Fatal(err)
	}
	forged := e.pod("forged", 1, 1000, 0)
	forged.Annotations = map[string]string{
		devices.AssignedNode:             "anywhere",
		"hami.io/vgpu-devices-allocated": "GPU-forged,NVIDIA,40000,100:;",
	}
	// No device request: the webhook's matchConditions skip it, and the
	// node's device plugin would read the forged assignment.
	skip := e.pod("skips-webhook", 0, 0, 0)
	skip.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	skip.Spec.NodeName = e.group + "-0"
	skip.Annotations = map[string]string{
		devices.AssignedNode: skip.Spec.NodeName, devices.BindPhase: devices.BindPhaseAllocating,
		"hami.io/vgpu-devices-to-allocate": "GPU-forged,NVIDIA,40000,100:;",
	}
	for _, p := range []*corev1.Pod{forged, skip} {
		var err error
		// RBAC bindings take a moment to reach the authorizer's cache.
		_ = wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err = tenant.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err == nil || !strings.Contains(err.Error(), "cannot create resource"), nil
		})
		if err == nil || !strings.Contains(err.Error(), "only hami-scheduler and the device plugin may set") {
			e.t.Errorf("tenant created pod %s with forged annotations: %v, want the policy's refusal", p.Name, err)
		}
	}
}

// checkNoForbidden fails the test for every request of the release's
// scheduler or webhook that the API server refused with 403.
func checkNoForbidden(t *testing.T, namespace string, since time.Time) {
	t.Helper()
	denied := forbidden(t, namespace, since)
	for _, e := range denied {
		t.Errorf("forbidden: %s", e)
	}
}

// checkEveryGrantUsed fails the test for every verb on a resource that
// the release's own ClusterRoles and Roles grant its ServiceAccounts and
// that no request of theirs used: the RBAC is trimmed to what the audit
// shows is used. The metrics reader role is Prometheus', not theirs.
func checkEveryGrantUsed(t *testing.T, r *release.Release, since time.Time) {
	t.Helper()
	events, err := localcluster.ReadAudit(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, ev := range events {
		if ev.ObjectRef == nil || ev.StageTimestamp.Time.Before(since) || ev.Code() >= 400 {
			continue
		}
		resource := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			resource += "/" + ev.ObjectRef.Subresource
		}
		used[ev.User.Username+" "+ev.Verb+" "+resource] = true
		if ev.Verb == "watch" {
			// An informer's initial list is a watch here (watch-list
			// streaming); against API servers without it the same
			// informer lists.
			used[ev.User.Username+" list "+resource] = true
		}
	}
	roles := map[string]string{
		"hami-scheduler": "hami-scheduler", "hami-scheduler-leader-election": "hami-scheduler",
		"hami-webhook": "hami-webhook", "hami-webhook-certs": "hami-webhook",
	}
	for _, o := range r.Objects {
		sa, ok := roles[o.GetName()]
		if !ok || (o.GetKind() != "ClusterRole" && o.GetKind() != "Role") {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatal(err)
		}
		user := "system:serviceaccount:" + r.Namespace + ":" + sa
		for _, rule := range role.Rules {
			for _, res := range rule.Resources {
				for _, verb := range rule.Verbs {
					if !used[user+" "+verb+" "+res] {
						t.Errorf("%s %s grants %s %s, which %s never used", o.GetKind(), o.GetName(), verb, res, user)
					}
				}
			}
		}
	}
}

// forbidden are the audit log's 403 answers to the release's
// ServiceAccounts since the time.
func forbidden(t *testing.T, namespace string, since time.Time) []localcluster.AuditEvent {
	t.Helper()
	events, err := localcluster.ReadAudit(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	users := []string{
		"system:serviceaccount:" + namespace + ":hami-scheduler",
		"system:serviceaccount:" + namespace + ":hami-webhook",
	}
	var out []localcluster.AuditEvent
	for _, e := range events {
		for _, u := range users {
			if e.User.Username == u && e.Code() == 403 && !e.StageTimestamp.Time.Before(since) {
				out = append(out, e)
			}
		}
	}
	return out
}

// env is one test's namespace and nodes.
type env struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	group string
}

func newEnv(ctx context.Context, t *testing.T, name string) *env {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := controlPlane.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agent, err := simnode.NewAgent(controlPlane.Config, simnode.Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Stop)
	return &env{t: t, ctx: ctx, ns: name, group: name}
}

func (e *env) addNodes(spec string) {
	e.t.Helper()
	specs, err := simnode.ParseSpecs(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	var nodes []*corev1.Node
	for _, s := range specs {
		nodes = append(nodes, s.Build(e.group, len(nodes))...)
	}
	for _, n := range nodes {
		n.Labels["e2e.hami.io/group"] = e.group
	}
	if err := simnode.Create(e.ctx, controlPlane.Client, nodes); err != nil {
		e.t.Fatal(err)
	}
}

// pod asks cards NVIDIA cards with memory MiB and cores percent (0: not
// asked) on the test's nodes; it names no scheduler: the webhook does.
func (e *env) pod(name string, cards, memory, cores int64) *corev1.Pod {
	limits := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(cards, resource.DecimalSI)}
	if memory > 0 {
		limits["nvidia.com/gpumem"] = *resource.NewQuantity(memory, resource.DecimalSI)
	}
	if cores > 0 {
		limits["nvidia.com/gpucores"] = *resource.NewQuantity(cores, resource.DecimalSI)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"e2e.hami.io/group": e.group},
			Containers:   []corev1.Container{{Name: "cuda", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: limits}}},
		},
	}
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	got, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create %s: %v", p.Name, err)
	}
	return got
}

func (e *env) delete(name string) {
	e.t.Helper()
	err := controlPlane.Client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	e.eventually("pod "+name+" gone", func() (bool, string) {
		_, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func (e *env) waitRunning(name string) *corev1.Pod {
	e.t.Helper()
	var p *corev1.Pod
	e.eventually("pod "+name+" running", func() (bool, string) {
		var err error
		p, err = controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s node %q conditions %v", p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
	})
	return p
}

// waitPendingUnschedulable waits for the scheduler to mark the pod
// unschedulable.
func (e *env) waitPendingUnschedulable(name string) {
	e.t.Helper()
	e.eventually("pod "+name+" unschedulable", func() (bool, string) {
		p, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return p.Spec.NodeName == "", c.Message
			}
		}
		return false, fmt.Sprintf("node %q conditions %v", p.Spec.NodeName, p.Status.Conditions)
	})
}

func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%s: not within %s; last: %s", what, waitLimit, last)
	}
}

// The audit catches a request the shipped RBAC does not allow: with the
// rule that lets hami-scheduler patch pods removed from its ClusterRole,
// the assignment patch of the next pod is refused and shows as a 403 of
// the scheduler's ServiceAccount.
func TestAuditCatchesARemovedRule(t *testing.T) {
	if controlPlane == nil {
		t.Skip("no control plane: the test binary is not stamped with a Kubernetes release (make test-unit stamps it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := release.Install(ctx, controlPlane, release.Options{
		Scheduler: binDir + "/hami-scheduler", Webhook: binDir + "/hami-webhook", Dir: t.TempDir(), Log: logFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Uninstall()
	roles := controlPlane.Client.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, "hami-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shipped := role.DeepCopy()
	defer func() {
		fresh, err := roles.Get(context.Background(), "hami-scheduler", metav1.GetOptions{})
		if err == nil {
			fresh.Rules = shipped.Rules
			_, err = roles.Update(context.Background(), fresh, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("restore the ClusterRole: %v", err)
		}
	}()
	var kept []rbacv1.PolicyRule
	for _, rule := range role.Rules {
		if !slices.Contains(rule.Resources, "pods") || !slices.Contains(rule.Verbs, "patch") {
			kept = append(kept, rule)
		}
	}
	if len(kept) == len(role.Rules) {
		t.Fatalf("ClusterRole hami-scheduler has no rule to patch pods: %+v", role.Rules)
	}
	role.Rules = kept
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	e := newEnv(ctx, t, "release-audit")
	e.addNodes("1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 10")
	e.create(e.pod("denied", 1, 1000, 0))
	e.eventually("a 403 of the scheduler in the audit log", func() (bool, string) {
		for _, ev := range forbidden(t, r.Namespace, since) {
			if ev.Verb == "patch" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "pods" {
				return true, ev.String()
			}
		}
		return false, "none"
	})
}

// A value the chart does not honour fails the install, naming it, before
// anything is applied: HAMi's values with a device-plugin setting, which
// the device plugin of HAMi's release keeps.
func TestReleaseRefusesUnhonouredValues(t *testing.T) {
	if controlPlane == nil {
		t.Skip("no control plane: the test binary is not stamped with a Kubernetes release (make test-unit stamps it)")
	}
	values := hamiValues()
	values["devicePlugin"] = map[string]any{"deviceSplitCount": 5}
	r, err := release.Install(t.Context(), controlPlane, release.Options{
		Values: values, Scheduler: binDir + "/hami-scheduler", Webhook: binDir + "/hami-webhook", Dir: t.TempDir(), Log: logFile,
	})
	if err == nil {
		r.Uninstall()
		t.Fatal("installed with devicePlugin.deviceSplitCount")
	}
	if !strings.Contains(err.Error(), "devicePlugin.deviceSplitCount: it configures HAMi's device plugin") {
		t.Errorf("error %v, want one naming devicePlugin.deviceSplitCount", err)
	}
}
