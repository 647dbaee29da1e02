package localcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	"k8s.io/kubernetes/pkg/controller/resourceclaim"
)

// resourceClaimSyncs is kube-controller-manager's default
// --concurrent-resource-claim-syncs.
const resourceClaimSyncs = 50

// Controllers are the few kube-controller-manager controllers a local
// cluster needs for workloads: deployment and replicaset (a Deployment gets
// its pods), the garbage collector (deleting a Deployment deletes them),
// the namespace controller (kubectl delete namespace empties the namespace
// and removes it, instead of leaving it Terminating), the Job controller
// (a Job gets its pods, as Kueue's Job integration needs) and the resource
// claim controller (a pod's claims made from its templates, and a claim
// released and deallocated once the pods reserving it are gone).
type Controllers struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	stop   []func()
}

// StartControllers runs the controllers until Stop.
func StartControllers(ctx context.Context, cfg *rest.Config) (*Controllers, error) {
	c := rest.CopyConfig(cfg)
	c.UserAgent = "hami-local-controllers"
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("controllers client: %w", err)
	}
	meta, err := metadata.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("controllers metadata client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cs := &Controllers{cancel: cancel}
	shared := informers.NewSharedInformerFactory(client, 0)
	metaInformers := metadatainformer.NewSharedInformerFactory(meta, 0)

	dc, err := deployment.NewDeploymentController(ctx, shared.Apps().V1().Deployments(), shared.Apps().V1().ReplicaSets(), shared.Core().V1().Pods(), client)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("deployment controller: %w", err)
	}
	jc, err := job.NewController(ctx, client, shared.Core().V1().Pods(), shared.Batch().V1().Jobs(), nil, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("job controller: %w", err)
	}
	rsc := replicaset.NewReplicaSetController(ctx, shared.Apps().V1().ReplicaSets(), shared.Core().V1().Pods(), client, replicaset.BurstReplicas)

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	mapper.Reset()
	started := make(chan struct{})
	gc, err := garbagecollector.NewGarbageCollector(ctx, client, meta, mapper, garbagecollector.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(shared, metaInformers), started)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("garbage collector: %w", err)
	}

	nc := namespace.NewNamespaceController(ctx, client, meta, client.Discovery().ServerPreferredNamespacedResources,
		shared.Core().V1().Namespaces(), 5*time.Minute, corev1.FinalizerKubernetes)

	// As kube-controller-manager starts it (the PodGroup informer is used
	// only with GenericWorkload on, when the API serves PodGroups).
	rcc, err := resourceclaim.NewController(klog.FromContext(ctx), client, shared.Core().V1().Pods(),
		shared.Scheduling().V1beta1().PodGroups(), shared.Resource().V1().ResourceClaims(), shared.Resource().V1().ResourceClaimTemplates())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("resource claim controller: %w", err)
	}

	shared.Start(ctx.Done())
	metaInformers.Start(ctx.Done())
	close(started)
	cs.done.Go(func() { dc.Run(ctx, 4) })
	cs.done.Go(func() { rsc.Run(ctx, 4) })
	cs.done.Go(func() { jc.Run(ctx, 4) })
	cs.done.Go(func() { gc.Run(ctx, 4, time.Minute) })
	cs.done.Go(func() { nc.Run(ctx, 2) })
	cs.done.Go(func() { rcc.Run(ctx, resourceClaimSyncs) })
	cs.done.Go(func() { gc.Sync(ctx, client.Discovery(), 30*time.Second) })
	cs.stop = append(cs.stop, shared.Shutdown, metaInformers.Shutdown)
	return cs, nil
}

// Stop ends the controllers and their informers.
func (cs *Controllers) Stop() {
	cs.cancel()
	cs.done.Wait()
	for _, stop := range cs.stop {
		stop()
	}
}
