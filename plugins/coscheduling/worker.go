package coscheduling

import (
	"context"

	"k8s.io/klog/v2"
)

// work takes keys from q and reconciles them one at a time until ctx ends;
// a key whose reconcile fails is retried with the queue's backoff.
func work(ctx context.Context, q groupQueue, what string, reconcile func(context.Context, string) error) {
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	logger := klog.FromContext(ctx)
	for {
		key, ok := getKey(q)
		if !ok {
			return
		}
		if err := reconcile(ctx, key); err != nil {
			logger.Error(err, "Retrying", "what", what, "podGroup", key)
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}
