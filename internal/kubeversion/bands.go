// Package kubeversion decides which Kubernetes minors a hami-scheduler
// build serves and what it emulates against a given API server.
//
// A build is kube-scheduler of one Kubernetes release (its "binary
// minor"). kube-scheduler waits for every informer it starts before it
// schedules, and a list the API server answers with 404 never syncs, so a
// build must not watch an API the cluster lacks. From 1.31 on,
// kube-scheduler can emulate an older minor (--emulated-version, down to
// the binary minor minus 3, never below 1.31), which turns off the feature
// gates, and with them the informers, that minor did not have. The version
// skew policy lets kube-scheduler be one minor older than the API server,
// never newer.
//
// The images ship one build per band; Bands lists them, and the chart picks
// its image tag the same way (manifests/charts/hami-scheduler, imageBand).
package kubeversion

import (
	"fmt"
	"slices"
	"strings"
)

// Band is one shipped build: kube-scheduler of Kubernetes 1.Minor, which
// serves API servers 1.Oldest() to 1.Newest().
type Band struct {
	// Minor is the Kubernetes minor the build is compiled from.
	Minor int
	// TestedBelow, when set, is an older API server minor than the skew
	// policy and emulation allow that the band serves all the same,
	// because test/compat runs it there (docs/compatibility.md says which).
	TestedBelow int
}

// Bands are the builds this tree ships, newest first. The image tag of a
// band is <version>-k8s1.<Minor>, its binary `make build K8S_MINOR=1.<Minor>`
// (the newest is also plain `make build`). kube-scheduler 1.30 cannot
// emulate; test/compat runs the 1.30 band on 1.28 and 1.29 API servers,
// outside the skew policy, where it watches nothing they lack.
var Bands = []Band{{Minor: 37}, {Minor: 33}, {Minor: 30, TestedBelow: 28}}

// firstEmulatingMinor is the first kube-scheduler that has
// --emulated-version.
const firstEmulatingMinor = 31

// emulationReach is how many minors below its own a binary can emulate.
const emulationReach = 3

// Oldest is the oldest API server minor the band serves: the oldest minor
// it can emulate (its own below 1.31), or TestedBelow.
func (b Band) Oldest() int {
	oldest := b.Minor
	if b.Minor >= firstEmulatingMinor {
		oldest = max(b.Minor-emulationReach, firstEmulatingMinor)
	}
	if b.TestedBelow > 0 {
		oldest = min(oldest, b.TestedBelow)
	}
	return oldest
}

// Newest is the newest API server minor the band serves: one newer than
// its own, as the skew policy allows.
func (b Band) Newest() int { return b.Minor + 1 }

// Serves reports whether the band serves an API server of minor 1.m.
func (b Band) Serves(m int) bool { return m >= b.Oldest() && m <= b.Newest() }

// Emulates returns the minor the band runs as against an API server of
// minor 1.m, which it serves: the server's own, or the band's when the
// server is newer or the band cannot emulate it (below 1.31, or below the
// oldest minor it can emulate: TestedBelow).
func (b Band) Emulates(m int) int {
	if b.Minor < firstEmulatingMinor {
		return b.Minor
	}
	return max(min(m, b.Minor), b.Minor-emulationReach, firstEmulatingMinor)
}

// Range is the band's API server range, e.g. "1.34 to 1.38".
func (b Band) Range() string { return fmt.Sprintf("1.%d to 1.%d", b.Oldest(), b.Newest()) }

// Tag is the band's image tag for the release version v, e.g.
// "0.1.0-k8s1.37".
func (b Band) Tag(v string) string { return fmt.Sprintf("%s-k8s1.%d", v, b.Minor) }

// BandFor is the newest shipped band that serves an API server of minor
// 1.m; ok is false when none does.
func BandFor(m int) (Band, bool) {
	for _, b := range Bands {
		if b.Serves(m) {
			return b, true
		}
	}
	return Band{}, false
}

// Supported lists the API server minors some shipped band serves, e.g.
// "1.31 to 1.38", ranges that touch or overlap merged.
func Supported() string {
	var ranges [][2]int
	for _, b := range slices.Backward(Bands) {
		if n := len(ranges); n > 0 && b.Oldest() <= ranges[n-1][1]+1 {
			ranges[n-1][1] = max(ranges[n-1][1], b.Newest())
			continue
		}
		ranges = append(ranges, [2]int{b.Oldest(), b.Newest()})
	}
	out := make([]string, 0, len(ranges))
	for _, r := range ranges {
		out = append(out, fmt.Sprintf("1.%d to 1.%d", r[0], r[1]))
	}
	return strings.Join(out, ", ")
}
