package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/switchover"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// switchLabel scopes both webhooks of TestSwitchFromHAMiAndBack to its
// namespace.
const switchLabel = "e2e.hami.io/switch"

// TestSwitchFromHAMiAndBack runs `kubectl hami switch` (internal/switchover)
// on a cluster carrying HAMi's release as HAMi v2.10's chart names and
// shapes it (hamirelease_test.go), while device pods keep being created,
// then switches back.
//
// hami-scheduler is installed beside HAMi's release as docs/switching.md
// says, from the chart with its values-beside-hami.yaml: its objects
// carry names of their own (hami-framework-*), its metrics Service no node
// port, and the switch finds them with its default flags.
//
// What is real: the API server, the switch, hami-scheduler's webhook
// (registered as the chart renders its configuration), the Deployment and
// ReplicaSet controllers, and the simulated kubelets that run both
// schedulers' pods and the device pods. What is modelled: HAMi's
// scheduler is its Deployment and pods only (HAMi's image does not run
// here), and HAMi's webhook is a stand-in, hami-webhook's own code (its
// rules are HAMi's) configured with gpuCorePolicy force so that the pods
// it mutated carry GPU_CORE_UTILIZATION_POLICY=force, served at the URL of
// HAMi's configuration; it keeps serving when HAMi's scheduler pods go,
// where HAMi's would stop, so the order in which the switch deletes the
// configuration and stops the pods is checked from the watch timeline
// instead. hami-scheduler's Deployment, from the chart, runs no scheduler
// either: the in-process scheduler answers hami-scheduler all along, as
// whichever of the two Deployments runs would (both answer that name).
// So the test shows that no pod goes unmutated, unplaced or
// over-committed, and the order of the steps; it cannot show two real
// schedulers not overlapping, only their pods not overlapping.
func TestSwitchFromHAMiAndBack(t *testing.T) {
	e := newEnv(t, "switch")
	ctx := e.ctx
	labelNamespace(t, e.ns, map[string]string{switchLabel: "on"})
	hamiNS, oursNS := e.ns+"-hami", e.ns+"-ours"
	createNamespace(t, hamiNS, nil)
	createNamespace(t, oursNS, nil)
	e.addNodes("4 nodes x 2 cards of NVIDIA A100 40 GiB, split 10", nil)
	onTestNodes := map[string]string{groupLabel: e.group}

	controllers, err := localcluster.StartControllers(ctx, controlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer controllers.Stop()
	stopOurs := installStandbyHAMiScheduler(t, oursNS, onTestNodes)
	defer stopOurs()
	hami, stopHAMiWebhook := installHAMi(t, hamiNS, onTestNodes)
	defer stopHAMiWebhook()
	defer hami.uninstall()
	waitDeploymentReady(t, e, hamiNS, "hami-scheduler")

	// Device pods admitted while HAMi runs: both webhooks mutate them.
	before := e.createDevicePods("before", 4)
	for _, p := range e.runningPods(before) {
		if !mutatedByHAMi(p) {
			t.Errorf("pod %s was not mutated by HAMi's webhook (the model is not as described)", p.Name)
		}
	}
	snapshot := snapshotHAMi(t, hami)

	tl := &timeline{}
	tl.watchWebhooks(ctx, t)
	tl.watchPods(ctx, t, "hami", hamiNS)
	tl.watchPods(ctx, t, "ours", oursNS)
	o := switchover.Options{HAMiNamespace: hamiNS, Namespace: oursNS, ProbeNamespace: e.ns, Timeout: waitLimit, Interval: 100 * time.Millisecond}

	t.Run("switch", func(t *testing.T) {
		e.t = t
		during := e.createWhile("during", func() { runSwitch(t, o, switchover.Switch) })
		checkDevicePods(e, during, before)
		isWebhookGone := func(c change) bool { return c.what == "webhook" && c.name == "hami-webhook" && c.typ == watch.Deleted }
		hamiStopping := func(c change) bool { return c.what == "hami" && (c.deleting || c.typ == watch.Deleted) }
		hamiGone := func(c change) bool { return c.what == "hami" && c.typ == watch.Deleted }
		oursCreated := func(c change) bool { return c.what == "ours" && c.typ == watch.Added }
		e.eventually("the switch's changes watched", func() (bool, string) {
			_, a := tl.first(0, isWebhookGone)
			_, b := tl.first(0, oursCreated)
			return a && b, fmt.Sprintf("webhook deletion %v, hami-scheduler pod %v", a, b)
		})
		tl.checkBefore(t, 0, "HAMi's webhook configuration deleted", isWebhookGone, "a HAMi scheduler pod stopping", hamiStopping, false)
		tl.checkBefore(t, 0, "the last HAMi scheduler pod gone", hamiGone, "the first hami-scheduler pod", oursCreated, true)
		checkSwitched(t, hami, snapshot)
		e.eventually("a dry-run device pod not mutated by HAMi's webhook", func() (bool, string) {
			p := e.dryRunDevicePod()
			return p != nil && !mutatedByHAMi(p), "mutated by HAMi's webhook"
		})
	})

	t.Run("back", func(t *testing.T) {
		e.t = t
		mark := tl.since()
		back := e.createWhile("back", func() { runSwitch(t, o, switchover.Back) })
		checkDevicePods(e, back, before)
		oursGone := func(c change) bool { return c.what == "ours" && c.typ == watch.Deleted }
		hamiCreated := func(c change) bool { return c.what == "hami" && c.typ == watch.Added }
		hamiReady := func(c change) bool { return c.what == "hami" && c.ready }
		webhookBack := func(c change) bool { return c.what == "webhook" && c.name == "hami-webhook" && c.typ == watch.Added }
		e.eventually("the way back's changes watched", func() (bool, string) {
			_, ok := tl.first(mark, webhookBack)
			return ok, "no webhook configuration created"
		})
		tl.checkBefore(t, mark, "the last hami-scheduler pod gone", oursGone, "the first HAMi scheduler pod", hamiCreated, true)
		tl.checkBefore(t, mark, "a HAMi scheduler pod ready", hamiReady, "HAMi's webhook configuration re-created", webhookBack, false)
		checkHAMiAsBefore(t, hami, snapshot)
		checkStandby(t, oursNS)
		e.eventually("a dry-run device pod mutated by HAMi's webhook again", func() (bool, string) {
			p := e.dryRunDevicePod()
			return p != nil && mutatedByHAMi(p), "not mutated by HAMi's webhook"
		})
	})
}

func runSwitch(t *testing.T, o switchover.Options, do func(context.Context, kubernetes.Interface, switchover.Options) error) {
	t.Helper()
	var out bytes.Buffer
	o.Out = &out
	err := do(t.Context(), controlPlane.Client, o)
	t.Logf("kubectl hami switch:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
}

// labelNamespace adds labels to a namespace.
func labelNamespace(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controlPlane.Client.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// installStandbyHAMiScheduler installs hami-scheduler as docs/switching.md
// says before a switch, from the chart rendered with its
// values-beside-hami.yaml and scheduler.replicas=0 (and
// scheduler.nodeSelector, the test's nodes): the scheduler's
// ServiceAccount, Deployment and metrics Service (beside HAMi's NodePort
// Service), and the MutatingWebhookConfiguration under its rendered name,
// registered for the in-process webhook (its URL and CA instead of the
// Service, scoped to the test's namespace).
func installStandbyHAMiScheduler(t *testing.T, namespace string, nodeSelector map[string]string) (stop func()) {
	t.Helper()
	objs := renderBesideHAMi(t, namespace, map[string]any{"replicas": 0, "nodeSelector": anyValues(nodeSelector)})
	name := switchover.DefaultDeployment
	var (
		account    corev1.ServiceAccount
		deployment appsv1.Deployment
		service    corev1.Service
		config     admissionv1.MutatingWebhookConfiguration
	)
	for _, want := range []struct {
		kind, name string
		into       any
	}{
		{"ServiceAccount", name, &account}, {"Deployment", name, &deployment}, {"Service", name, &service},
		{"MutatingWebhookConfiguration", "", &config},
	} {
		o := manifestgen.Find(objs, want.kind, want.name)
		if o == nil {
			t.Fatalf("the chart with %s renders no %s %s", manifestgen.BesideHAMiValuesFile, want.kind, want.name)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, want.into); err != nil {
			t.Fatal(err)
		}
	}
	ctx, c := t.Context(), controlPlane.Client
	if _, err := c.CoreV1().ServiceAccounts(namespace).Create(ctx, &account, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().Deployments(namespace).Create(ctx, &deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Services(namespace).Create(ctx, &service, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := localcluster.StartWebhook(ctx, controlPlane.Config, localcluster.WebhookOptions{
		Configuration:   &config,
		NamespaceLabels: map[string]string{switchLabel: "on"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.Stop
}

// renderBesideHAMi is the chart rendered for a release in namespace with
// its values-beside-hami.yaml, and scheduler values over them.
func renderBesideHAMi(t *testing.T, namespace string, scheduler map[string]any) []*unstructured.Unstructured {
	t.Helper()
	values, err := manifestgen.ReadValues(filepath.Join(manifestgen.RepoRoot(), manifestgen.BesideHAMiValuesFile))
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := values["scheduler"].(map[string]any)
	if ours == nil {
		ours = map[string]any{}
	}
	maps.Copy(ours, scheduler)
	values["scheduler"] = ours
	rendered, err := manifestgen.Render(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifestgen.Decode(manifestgen.Documents(rendered))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// anyValues is a string map as Helm values.
func anyValues(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// installHAMi installs HAMi's release in the namespace, its webhook
// configuration calling the stand-in for HAMi's webhook (see
// TestSwitchFromHAMiAndBack).
func installHAMi(t *testing.T, namespace string, nodeSelector map[string]string) (*hamiRelease, func()) {
	t.Helper()
	standIn, err := localcluster.StartWebhook(t.Context(), controlPlane.Config, localcluster.WebhookOptions{
		ConfigurationName: "hami-webhook-stand-in",
		NamespaceLabels:   map[string]string{switchLabel: "on"},
		Vendors:           []devices.Config{{Name: "nvidia", CorePolicy: nvidia.CorePolicyForce}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Only HAMi's configuration calls the stand-in.
	if err := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(t.Context(), "hami-webhook-stand-in", metav1.DeleteOptions{}); err != nil {
		standIn.Stop()
		t.Fatal(err)
	}
	r, err := newHAMiRelease(namespace, hamiValues{nodeSelector: nodeSelector, webhookURL: standIn.URL, webhookCA: standIn.CA,
		namespaceLabels: map[string]string{switchLabel: "on"}})
	if err != nil {
		standIn.Stop()
		t.Fatal(err)
	}
	r.install(t.Context(), t)
	return r, standIn.Stop
}

// mutatedByHAMi: the stand-in for HAMi's webhook mutated the pod.
func mutatedByHAMi(p *corev1.Pod) bool {
	for _, env := range p.Spec.Containers[0].Env {
		if env.Name == nvidia.CorePolicyEnv && env.Value == nvidia.CorePolicyForce {
			return true
		}
	}
	return false
}

// devicePod is a pod of the test's nodes asking 1000 MiB of a card and
// nothing else: the webhook adds the card count and the scheduler name.
func (e *env) devicePod(name string) *corev1.Pod {
	p := e.pod(name)
	p.Spec.SchedulerName = ""
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: "cuda:sim", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{nvidia.DefaultMemoryName: *resource.NewQuantity(1000, resource.DecimalSI)},
	}}}
	return p
}

// dryRunDevicePod is a device pod as admission leaves it (a server-side
// dry run); nil if it is refused.
func (e *env) dryRunDevicePod() *corev1.Pod {
	p := e.devicePod("")
	p.GenerateName = "dry-run-"
	got, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		e.t.Logf("dry-run device pod: %v", err)
		return nil
	}
	return got
}

// createDevicePods creates n device pods named prefix-0, prefix-1, ...
func (e *env) createDevicePods(prefix string, n int) []string {
	e.t.Helper()
	var names []string
	for i := range n {
		names = append(names, e.create(e.devicePod(fmt.Sprintf("%s-%d", prefix, i))).Name)
	}
	return names
}

// createWhile creates a device pod every 100 ms from before do starts
// until after it returns (two before, two after, at most 30 in all) and
// returns their names. A pod the API server refuses fails the test.
func (e *env) createWhile(prefix string, do func()) []string {
	e.t.Helper()
	const every, most = 100 * time.Millisecond, 30
	var (
		mu    sync.Mutex
		names []string
		errs  []error
	)
	created := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(names)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < most; i++ {
			p := e.devicePod(fmt.Sprintf("%s-%d", prefix, i))
			_, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			} else {
				names = append(names, p.Name)
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
		}
	}()
	e.eventually("two device pods created before the change", func() (bool, string) { return created() >= 2, fmt.Sprint(created()) })
	do()
	after := created()
	e.eventually("two device pods created after the change", func() (bool, string) {
		return created() >= min(after+2, most), fmt.Sprint(created())
	})
	close(stop)
	<-done
	for _, err := range errs {
		e.t.Errorf("device pod refused: %v", err)
	}
	e.t.Logf("%d device pods created while the switch ran", len(names))
	return names
}

// runningPods waits until every named pod runs, and returns them.
func (e *env) runningPods(names []string) map[string]*corev1.Pod {
	e.t.Helper()
	e.waitAllRunning(names)
	got := map[string]*corev1.Pod{}
	for _, n := range names {
		got[n] = e.get(n)
	}
	return got
}

// checkDevicePods: every pod created during the change was mutated (the
// card count added, hami-scheduler named) and runs on the node its
// assignment names; the pods from before still run, the same pods; no
// card is over-committed.
func checkDevicePods(e *env, during, before []string) {
	e.t.Helper()
	for name, p := range e.runningPods(during) {
		count := p.Spec.Containers[0].Resources.Limits[nvidia.DefaultCountName]
		switch {
		case p.Spec.SchedulerName != profile.SchedulerName:
			e.t.Errorf("pod %s: schedulerName %q, want %q", name, p.Spec.SchedulerName, profile.SchedulerName)
		case count.Value() != 1:
			e.t.Errorf("pod %s: %s %s, want 1 added by a webhook (admitted unmutated?)", name, nvidia.DefaultCountName, count.String())
		case p.Annotations[devices.AssignedNode] != p.Spec.NodeName:
			e.t.Errorf("pod %s runs on %s, its assignment names %q", name, p.Spec.NodeName, p.Annotations[devices.AssignedNode])
		}
	}
	for name, p := range e.runningPods(before) {
		if p.Spec.SchedulerName != profile.SchedulerName {
			e.t.Errorf("pod %s from before the switch: schedulerName %q", name, p.Spec.SchedulerName)
		}
	}
	e.checkAccounting()
}

// waitDeploymentReady waits until the Deployment has a ready pod.
func waitDeploymentReady(t *testing.T, e *env, namespace, name string) {
	t.Helper()
	e.eventually("Deployment "+namespace+"/"+name+" ready", func() (bool, string) {
		d, err := controlPlane.Client.AppsV1().Deployments(namespace).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas >= 1, fmt.Sprintf("%d ready", d.Status.ReadyReplicas)
	})
}

// hamiSnapshot is HAMi's release as installed and run, before the switch.
type hamiSnapshot struct {
	scheduler *appsv1.Deployment
	webhook   *admissionv1.MutatingWebhookConfiguration
	// kept are the resource versions of the objects the switch must not
	// write: ServiceAccounts, ConfigMaps, Services, the device plugin.
	kept map[string]string
}

func snapshotHAMi(t *testing.T, r *hamiRelease) hamiSnapshot {
	t.Helper()
	d, err := controlPlane.Client.AppsV1().Deployments(r.namespace).Get(t.Context(), r.scheduler.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hamiSnapshot{scheduler: d, webhook: r.webhook, kept: keptVersions(t, r)}
}

// keptVersions are the resource versions of the objects the switch keeps.
func keptVersions(t *testing.T, r *hamiRelease) map[string]string {
	t.Helper()
	ctx, c := t.Context(), controlPlane.Client
	out := map[string]string{}
	add := func(kind string, o metav1.Object, err error) {
		if err != nil {
			t.Fatalf("HAMi's %s: %v", kind, err)
		}
		out[kind+" "+o.GetName()] = o.GetResourceVersion()
	}
	for _, name := range []string{r.schedulerAccount.Name, r.devicePluginAccount.Name} {
		o, err := c.CoreV1().ServiceAccounts(r.namespace).Get(ctx, name, metav1.GetOptions{})
		add("ServiceAccount", o, err)
	}
	for _, name := range []string{r.schedulerConfig.Name, r.deviceConfig.Name, r.devicePluginConfig.Name} {
		o, err := c.CoreV1().ConfigMaps(r.namespace).Get(ctx, name, metav1.GetOptions{})
		add("ConfigMap", o, err)
	}
	for _, name := range []string{r.schedulerService.Name, r.monitorService.Name} {
		o, err := c.CoreV1().Services(r.namespace).Get(ctx, name, metav1.GetOptions{})
		add("Service", o, err)
	}
	ds, err := c.AppsV1().DaemonSets(r.namespace).Get(ctx, r.devicePlugin.Name, metav1.GetOptions{})
	add("DaemonSet", ds, err)
	return out
}

// checkSwitched: HAMi's scheduler at 0 with the record, no webhook
// configuration of HAMi's, everything else of HAMi's untouched.
func checkSwitched(t *testing.T, r *hamiRelease, before hamiSnapshot) {
	t.Helper()
	d, err := controlPlane.Client.AppsV1().Deployments(r.namespace).Get(t.Context(), r.scheduler.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 0 || d.Annotations[switchover.RecordAnnotation] == "" {
		t.Errorf("HAMi's scheduler after the switch: %d replicas, record %q", *d.Spec.Replicas, d.Annotations[switchover.RecordAnnotation])
	}
	if _, err := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), r.webhook.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("HAMi's webhook configuration %s is still there", r.webhook.Name)
	}
	if diff := cmp.Diff(before.kept, keptVersions(t, r)); diff != "" {
		t.Errorf("the switch wrote HAMi's objects it keeps (-before +after):\n%s", diff)
	}
}

// checkHAMiAsBefore: HAMi's scheduler Deployment and webhook
// configuration are as before the switch, the rest untouched.
func checkHAMiAsBefore(t *testing.T, r *hamiRelease, before hamiSnapshot) {
	t.Helper()
	ctx := t.Context()
	d, err := controlPlane.Client.AppsV1().Deployments(r.namespace).Get(ctx, r.scheduler.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.scheduler.Spec, d.Spec); diff != "" {
		t.Errorf("HAMi's scheduler Deployment spec (-before +after):\n%s", diff)
	}
	if !maps.Equal(before.scheduler.Annotations, d.Annotations) || !maps.Equal(before.scheduler.Labels, d.Labels) {
		t.Errorf("HAMi's scheduler Deployment: annotations %v labels %v, before %v %v", d.Annotations, d.Labels, before.scheduler.Annotations, before.scheduler.Labels)
	}
	w, err := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, r.webhook.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("HAMi's webhook configuration after the way back: %v", err)
	}
	if diff := cmp.Diff(before.webhook.Webhooks, w.Webhooks); diff != "" {
		t.Errorf("HAMi's webhooks (-before +after):\n%s", diff)
	}
	if !maps.Equal(before.webhook.Labels, w.Labels) || !maps.Equal(before.webhook.Annotations, w.Annotations) {
		t.Errorf("HAMi's webhook configuration: labels %v annotations %v, before %v %v", w.Labels, w.Annotations, before.webhook.Labels, before.webhook.Annotations)
	}
	if diff := cmp.Diff(before.kept, keptVersions(t, r)); diff != "" {
		t.Errorf("HAMi's objects the switch keeps were written (-before +after):\n%s", diff)
	}
}

// checkStandby: hami-scheduler's Deployment is back at 0, with no pod.
func checkStandby(t *testing.T, namespace string) {
	t.Helper()
	d, err := controlPlane.Client.AppsV1().Deployments(namespace).Get(t.Context(), switchover.DefaultDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := controlPlane.Client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 0 || len(pods.Items) != 0 {
		t.Errorf("hami-scheduler after the way back: %d replicas, %d pods; want 0 and none", *d.Spec.Replicas, len(pods.Items))
	}
}
