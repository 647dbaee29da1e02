package cache

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// TestConcurrentUse drives the cache from informer-like writers, Filter-like
// readers and Reserve/Unreserve at once; run with -race. Every pod that is
// assumed is also forgotten, and every pod that is confirmed is deleted, so
// the cache must end empty.
func TestConcurrentUse(t *testing.T) {
	c := newCache(t)
	const nodes, podsPerWorker, workers = 4, 50, 4
	for i := 0; i < nodes; i++ {
		c.SetNode(gpuNode(fmt.Sprintf("n%d", i), 8))
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < podsPerWorker; i++ {
				node := fmt.Sprintf("n%d", i%nodes)
				uid := fmt.Sprintf("w%d-p%d", w, i)
				card := fmt.Sprintf("%s-gpu%d", node, i%8)
				if i%2 == 0 {
					p := boundPod(uid, "", "")
					if err := c.Assume(p, node, assignment(grant(card, 100, 1))); err != nil {
						t.Error(err)
					}
					c.Forget(p)
					continue
				}
				p := boundPod(uid, node, card+",NVIDIA,100,1:;")
				if err := c.SetPod(p); err != nil {
					t.Error(err)
				}
				c.RemovePod(p)
			}
		}(w)
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf [8]devices.Usage
			for i := 0; i < 500; i++ {
				if _, _, err := c.Snapshot(fmt.Sprintf("n%d", i%nodes), 0, buf[:0]); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			c.SetNode(gpuNode(fmt.Sprintf("n%d", i%nodes), 8))
		}
	}()
	wg.Wait()
	if s := c.Stats(); s.Pods != 0 {
		t.Errorf("stats after all pods left = %+v, want no pods", s)
	}
	for i := 0; i < nodes; i++ {
		for ci, used := range usage(t, c, fmt.Sprintf("n%d", i)) {
			if used != (devices.Usage{}) {
				t.Errorf("n%d card %d usage = %v, want zero", i, ci, used)
			}
		}
	}
}
