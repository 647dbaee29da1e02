package devices

import (
	"encoding/json"
	"fmt"
	"time"
)

// GangReservationsAnnotation, on a PodGroup, lists the cards that its
// members waiting at Permit for the rest of their group hold, as the
// scheduler that placed them wrote it; absent when none waits. The cards
// are reserved in that scheduler's memory only, and no pod annotation or
// node lock is written until the group is let through, so this is the one
// place the API shows them (kubectl hami top reads it).
const GangReservationsAnnotation = "hami.io/gang-reservations"

// GangReservations is the value of GangReservationsAnnotation.
type GangReservations struct {
	// Updated is when the scheduler wrote it.
	Updated time.Time `json:"updated"`
	// Members are the waiting members, by pod name.
	Members []GangReservation `json:"members"`
}

// GangReservation is what one waiting member holds.
type GangReservation struct {
	Pod  string `json:"pod"`
	UID  string `json:"uid"`
	Node string `json:"node"`
	// Allocated maps each vendor's allocated annotation key
	// (hami.io/vgpu-devices-allocated, ...) to the assignment, encoded as
	// the pod annotation would carry it.
	Allocated map[string]string `json:"allocated"`
}

// ParseGangReservations reads GangReservationsAnnotation's value.
func ParseGangReservations(value string) (*GangReservations, error) {
	var r GangReservations
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", GangReservationsAnnotation, err)
	}
	return &r, nil
}
