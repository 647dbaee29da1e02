package coscheduling

import (
	"sync"
	"time"
)

// groupFailures remembers, per group, when it was last rejected (the
// queue then sorts its members as if the group were created at that time,
// behind groups that did not just fail, as scheduler-plugins does) and
// until when it backs off (podGroupBackoffSeconds).
type groupFailures struct {
	mu      sync.Mutex
	last    map[string]time.Time
	backoff map[string]time.Time
}

// rejected records a rejection of the group at now and, when backoff is
// positive and the group is not backing off already, a backoff until
// now+backoff; armed reports whether it started one. A backoff that runs
// is never extended, as scheduler-plugins adds one only when none is
// there: members turned away during it (each goes through PostFilter)
// would otherwise keep the group backing off.
func (f *groupFailures) rejected(group string, now time.Time, backoff time.Duration) (armed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last, f.backoff = map[string]time.Time{}, map[string]time.Time{}
	}
	f.last[group] = now
	if backoff <= 0 {
		return false
	}
	if until, ok := f.backoff[group]; ok && now.Before(until) {
		return false
	}
	f.backoff[group] = now.Add(backoff)
	return true
}

// lastRejection is when the group was last rejected, if it was since it
// last had its members placed.
func (f *groupFailures) lastRejection(group string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.last[group]
	return t, ok
}

// backingOff returns until when the group backs off, if it does at now.
func (f *groupFailures) backingOff(group string, now time.Time) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.backoff[group]
	if ok && !now.Before(until) {
		delete(f.backoff, group)
		return time.Time{}, false
	}
	return until, ok
}

// placed forgets the group's last rejection: its members were placed.
func (f *groupFailures) placed(group string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.last, group)
}

// forget drops everything about a deleted group.
func (f *groupFailures) forget(group string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.last, group)
	delete(f.backoff, group)
}

// groupWaits remembers, per group whose placed members wait at Permit,
// when the first of them stops waiting: an Unreserve at or after that
// time is the group's timeout.
type groupWaits struct {
	mu       sync.Mutex
	deadline map[string]time.Time
}

// start records that a member of the group waits until deadline, and
// reports whether it is the first to wait in this round.
func (w *groupWaits) start(group string, deadline time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deadline == nil {
		w.deadline = map[string]time.Time{}
	}
	if _, waiting := w.deadline[group]; waiting {
		return false
	}
	w.deadline[group] = deadline
	return true
}

// end closes the group's round of waiting and reports whether one was open
// and whether its deadline had passed at now.
func (w *groupWaits) end(group string, now time.Time) (open, expired bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	deadline, open := w.deadline[group]
	delete(w.deadline, group)
	return open, open && !now.Before(deadline)
}
