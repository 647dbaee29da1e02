package devices

import (
	"encoding/json"
	"fmt"
)

// AssignmentRecord is the pod annotation in which hami-scheduler keeps its
// own copy of the assignment it wrote under each vendor's allocated key: a
// JSON object from the allocated key to the encoded assignment, e.g.
// {"hami.io/Biren-devices-allocated":";7-0,Biren,0,0:;"}. No device plugin
// reads or writes it. Some rewrite the allocated key while serving the pod
// (Biren's erases it), and the usage cache, which rebuilds from what pods
// hold, would then see the pod's cards as free; with the record it does
// not. HAMi's extender writes no record: a pod without one is read from the
// allocated keys, as HAMi reads it.
const AssignmentRecord = "hami.io/scheduler-assignment"

// EncodeRecord is the AssignmentRecord value of the encoded assignments by
// allocated key.
func EncodeRecord(byKey map[string]string) (string, error) {
	data, err := json.Marshal(byKey)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", AssignmentRecord, err)
	}
	return string(data), nil
}

// AllocatedReader reads what a pod holds under the vendors' allocated keys,
// from its AssignmentRecord when it has one, else from the keys themselves.
type AllocatedReader struct {
	annotations map[string]string
	record      map[string]string
	recorded    bool
}

// ReadAllocated prepares the reading of a pod's annotations; an
// AssignmentRecord that cannot be decoded is an error (the caller fails
// the pod closed, as for an unreadable allocated key).
func ReadAllocated(annotations map[string]string) (AllocatedReader, error) {
	r := AllocatedReader{annotations: annotations}
	raw, ok := annotations[AssignmentRecord]
	if !ok {
		return r, nil
	}
	if err := json.Unmarshal([]byte(raw), &r.record); err != nil {
		return AllocatedReader{}, fmt.Errorf("annotation %s: %w", AssignmentRecord, err)
	}
	r.recorded = true
	return r, nil
}

// Value is the encoded assignment held under the allocated key, and
// whether there is one.
func (r AllocatedReader) Value(key string) (string, bool) {
	if r.recorded {
		v, ok := r.record[key]
		return v, ok
	}
	v, ok := r.annotations[key]
	return v, ok
}

// Recorded reports whether the values come from an AssignmentRecord.
func (r AllocatedReader) Recorded() bool { return r.recorded }
