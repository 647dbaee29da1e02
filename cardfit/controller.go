package cardfit

import (
	"context"
	"fmt"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// FieldManager owns the fields the controller applies.
const FieldManager = "hami-card-fit"

// Defaults of Options.
const (
	DefaultPromiseTimeout = 2 * time.Minute
	DefaultRetryBase      = 5 * time.Second
	DefaultRetryMax       = time.Minute
)

// Options configure the controller.
type Options struct {
	// PromiseTimeout bounds a promise: the cards of a workload the check
	// passed are kept for its pods that are not placed until this long
	// after the check passed it.
	PromiseTimeout time.Duration
	// RetryBase and RetryMax bound the time Kueue waits before it reserves
	// quota again for a workload the check sent back (Retry's
	// requeueAfterSeconds): RetryBase doubled per earlier retry, at most
	// RetryMax.
	RetryBase, RetryMax time.Duration
	// Clock is the controller's clock (tests); nil is the real one.
	Clock clock.PassiveClock
}

func (o *Options) defaults() {
	if o.PromiseTimeout <= 0 {
		o.PromiseTimeout = DefaultPromiseTimeout
	}
	if o.RetryBase <= 0 {
		o.RetryBase = DefaultRetryBase
	}
	if o.RetryMax < o.RetryBase {
		o.RetryMax = max(DefaultRetryMax, o.RetryBase)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Controller is Kueue's admission check hami.io/card-fit: a workload
// waiting on it is Ready when every pod of every pod set fits on the cards
// free now, less what the workloads it passed before still need, and
// Retry otherwise, naming what runs short. Run it on one process at a
// time (hami-scheduler's leader): two would promise the same cards twice.
type Controller struct {
	opts      Options
	cards     Cards
	pods      corelisters.PodLister
	client    dynamic.Interface
	discovery discovery.DiscoveryInterface
}

// New builds the controller for the API server of cfg, reading the cards
// of cards and the pods of pods (the scheduler's informer).
func New(cfg *rest.Config, cards Cards, pods corelisters.PodLister, opts Options) (*Controller, error) {
	opts.defaults()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{opts: opts, cards: cards, pods: pods, client: client, discovery: disc}, nil
}

// ServedVersion returns the first of Versions whose Workloads and
// AdmissionChecks the API server serves, or "" when Kueue is not
// installed.
func ServedVersion(disc discovery.DiscoveryInterface) string {
	for _, v := range Versions {
		list, err := disc.ServerResourcesForGroupVersion(Group + "/" + v)
		if err != nil {
			continue
		}
		found := 0
		for _, r := range list.APIResources {
			if r.Name == workloadsResource || r.Name == admissionChecksResource {
				found++
			}
		}
		if found == 2 {
			return v
		}
	}
	return ""
}

// Run answers the check until ctx ends. It waits for Kueue's API, checking
// every 10 s, and then for its informers.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("card-fit")
	var version string
	err := wait.PollUntilContextCancel(ctx, 10*time.Second, true, func(context.Context) (bool, error) {
		version = ServedVersion(c.discovery)
		if version == "" {
			logger.V(2).Info("Kueue's API is not served yet")
		}
		return version != "", nil
	})
	if err != nil {
		return nil
	}
	logger.Info("Answering Kueue's admission checks", "controllerName", ControllerName, "version", Group+"/"+version, "promiseTimeout", c.opts.PromiseTimeout)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(c.client, 0)
	workloads := factory.ForResource(gvr(version, workloadsResource))
	checks := factory.ForResource(gvr(version, admissionChecksResource))
	// The untyped queue: the band of Kubernetes 1.30 builds this package
	// with client-go 0.30, before the typed one.
	queue := workqueue.NewRateLimitingQueueWithConfig(workqueue.DefaultControllerRateLimiter(), //nolint:staticcheck // see above
		workqueue.RateLimitingQueueConfig{Name: "card-fit"})
	defer queue.ShutDown()
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { queue.Add(roundKey) },
		UpdateFunc: func(any, any) { queue.Add(roundKey) },
		DeleteFunc: func(any) { queue.Add(roundKey) },
	}
	for _, inf := range []cache.SharedIndexInformer{workloads.Informer(), checks.Informer()} {
		if _, err := inf.AddEventHandler(enqueue); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), workloads.Informer().HasSynced, checks.Informer().HasSynced) {
		return nil
	}
	r := &runner{c: c, version: version, workloads: workloads.Lister(), checks: checks.Lister(), answered: map[types.UID]string{}}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		key, quit := queue.Get()
		if quit {
			return nil
		}
		after, err := r.round(klog.NewContext(ctx, logger))
		switch {
		case err != nil:
			logger.Error(err, "Card-fit round failed; retrying")
			queue.AddRateLimited(key)
		case after > 0:
			queue.Forget(key)
			queue.AddAfter(key, after)
		default:
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// roundKey is the one key of the queue: every event asks for a round over
// every workload.
const roundKey = "round"

// runner is one Run's state.
type runner struct {
	c         *Controller
	version   string
	workloads cache.GenericLister
	checks    cache.GenericLister
	// answered is the resourceVersion of each workload the check answered:
	// until the informer shows the answer, the same version is not
	// answered again.
	answered map[types.UID]string
}

// round answers every workload waiting on the check; after > 0 asks for
// another round then (the cards are not known yet).
func (r *runner) round(ctx context.Context) (after time.Duration, err error) {
	names, err := r.ownChecks(ctx)
	if err != nil || len(names) == 0 {
		return 0, err
	}
	objs, err := r.workloads.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	workloads := make([]*workload, 0, len(objs))
	seen := make(map[types.UID]bool, len(objs))
	for _, o := range objs {
		wl := &workload{}
		if err := decode(o, wl); err != nil {
			klog.FromContext(ctx).Error(err, "Unreadable workload")
			continue
		}
		seen[wl.UID] = true
		workloads = append(workloads, wl)
	}
	for uid := range r.answered {
		if !seen[uid] {
			delete(r.answered, uid)
		}
	}
	pods, err := r.c.pods.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	rd := &round{cards: r.c.cards, checks: names, now: r.c.opts.Clock.Now(), timeout: r.c.opts.PromiseTimeout, placed: placedPods(r.c.cards, pods)}
	decisions, promises, ok := rd.decide(workloads)
	if !ok {
		return time.Second, nil
	}
	logger := klog.FromContext(ctx)
	for _, d := range decisions {
		if r.answered[d.wl.UID] == d.wl.ResourceVersion {
			continue
		}
		err := r.apply(ctx, d, rd.now)
		if apierrors.IsConflict(err) {
			// The workload changed since the informer showed it: its new
			// version brings another round.
			logger.V(4).Info("Workload changed before the answer", "workload", klog.KObj(d.wl))
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("workload %s: %w", klog.KObj(d.wl), err)
		}
		r.answered[d.wl.UID] = d.wl.ResourceVersion
		logger.V(2).Info("Admission check answered", "workload", klog.KObj(d.wl), "check", d.check, "state", d.state, "message", d.message)
	}
	if len(decisions) > 0 {
		logger.V(4).Info("Promises kept", "workloads", len(promises))
	}
	return 0, nil
}

// ownChecks returns the names of the AdmissionChecks of this controller,
// marking each Active.
func (r *runner) ownChecks(ctx context.Context) (map[string]bool, error) {
	objs, err := r.checks.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, o := range objs {
		ac := &admissionCheck{}
		if err := decode(o, ac); err != nil || ac.Spec.ControllerName != ControllerName {
			continue
		}
		names[ac.Name] = true
		if meta.IsStatusConditionTrue(ac.Status.Conditions, "Active") {
			continue
		}
		if err := r.markActive(ctx, ac); err != nil {
			return nil, fmt.Errorf("admission check %s: %w", ac.Name, err)
		}
	}
	return names, nil
}

// markActive sets the AdmissionCheck's Active condition, without which
// Kueue keeps the ClusterQueues using it inactive.
func (r *runner) markActive(ctx context.Context, ac *admissionCheck) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + r.version,
		"kind":       "AdmissionCheck",
		"metadata":   map[string]any{"name": ac.Name},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type":               "Active",
			"status":             string(metav1.ConditionTrue),
			"reason":             "Active",
			"message":            "hami-scheduler's leader answers it",
			"lastTransitionTime": r.c.opts.Clock.Now().UTC().Format(time.RFC3339),
			"observedGeneration": ac.Generation,
		}}},
	}}
	_, err := r.c.client.Resource(gvr(r.version, admissionChecksResource)).ApplyStatus(ctx, ac.Name, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// apply writes the decision into the workload's state of the check
// (server-side apply of that one entry of status.admissionChecks), on the
// version of the workload it was made for: a stale answer, e.g. Retry
// after Kueue has already reset the check, would keep Kueue from ever
// trying the workload again.
func (r *runner) apply(ctx context.Context, d decision, now time.Time) error {
	entry := map[string]any{
		"name":               d.check,
		"state":              d.state,
		"message":            truncate(d.message, 1024),
		"lastTransitionTime": now.UTC().Format(time.RFC3339),
	}
	if d.state == stateReady {
		var updates []any
		for _, u := range d.updates {
			ann := map[string]any{}
			for k, v := range u.Annotations {
				ann[k] = v
			}
			updates = append(updates, map[string]any{"name": u.Name, "annotations": ann})
		}
		entry["podSetUpdates"] = updates
	} else {
		st := d.wl.checkNamed(map[string]bool{d.check: true})
		entry["requeueAfterSeconds"] = int64(r.retryAfter(st).Seconds())
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + r.version,
		"kind":       "Workload",
		"metadata":   map[string]any{"name": d.wl.Name, "namespace": d.wl.Namespace, "resourceVersion": d.wl.ResourceVersion},
		"status":     map[string]any{"admissionChecks": []any{entry}},
	}}
	_, err := r.c.client.Resource(gvr(r.version, workloadsResource)).Namespace(d.wl.Namespace).ApplyStatus(ctx, d.wl.Name, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// retryAfter is RetryBase doubled per earlier retry of the check, at most
// RetryMax.
func (r *runner) retryAfter(st *checkState) time.Duration {
	retries := 0
	if st != nil && st.RetryCount != nil {
		retries = int(*st.RetryCount)
	}
	d := float64(r.c.opts.RetryBase) * math.Pow(2, float64(min(retries, 30)))
	return time.Duration(min(d, float64(r.c.opts.RetryMax))).Round(time.Second)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
