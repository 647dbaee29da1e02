//go:build k8s1.30

package coscheduling

import "k8s.io/client-go/util/workqueue"

// groupQueue is a rate-limited work queue of PodGroup keys (1.30's
// client-go has no typed queue).
type groupQueue = workqueue.RateLimitingInterface

func newGroupQueue(name string) groupQueue {
	return workqueue.NewRateLimitingQueueWithConfig(workqueue.DefaultControllerRateLimiter(),
		workqueue.RateLimitingQueueConfig{Name: name})
}

// getKey takes the next key from q.
func getKey(q groupQueue) (string, bool) {
	item, shutdown := q.Get()
	if shutdown {
		return "", false
	}
	key, _ := item.(string)
	return key, true
}
