package nodelock

import "sync"

// changes wakes the Lock calls waiting on a node when the node informer
// delivers a new version of it. A waiter takes the node's channel before it
// reads the node, so a change between its read and its wait is not missed.
type changes struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

// next returns a channel that is closed at the node's next change.
func (c *changes) next(node string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.chans == nil {
		c.chans = map[string]chan struct{}{}
	}
	ch, ok := c.chans[node]
	if !ok {
		ch = make(chan struct{})
		c.chans[node] = ch
	}
	return ch
}

// fire wakes everyone waiting for a change of node.
func (c *changes) fire(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.chans[node]; ok {
		close(ch)
		delete(c.chans, node)
	}
}

// NodeChanged tells the Locker that the informer has a new version of the
// node (or that it was deleted): Lock calls waiting on it look again now.
func (l *Locker) NodeChanged(name string) {
	l.changes.fire(name)
}
