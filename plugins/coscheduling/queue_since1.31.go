//go:build !k8s1.30

package coscheduling

import "k8s.io/client-go/util/workqueue"

// groupQueue is a rate-limited work queue of PodGroup keys.
type groupQueue = workqueue.TypedRateLimitingInterface[string]

func newGroupQueue(name string) groupQueue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// getKey takes the next key from q.
func getKey(q groupQueue) (string, bool) {
	key, shutdown := q.Get()
	return key, !shutdown
}
