package metax

import (
	"cmp"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// PodAppClass is the pod's metax-tech.com/sgpu-app-class when it is online
// or offline, else "" (nil pod included).
func PodAppClass(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	switch c := pod.Annotations[AppClassAnnotation]; c {
	case Online, Offline:
		return c
	}
	return ""
}

// grantClass is the devices.AppClass of an app class ("" for none).
func grantClass(class string) devices.AppClass {
	switch class {
	case Online:
		return devices.AppClassOnline
	case Offline:
		return devices.AppClassOffline
	}
	return devices.AppClassNone
}

// GrantClass implements devices.GrantClassifier: the class of the pod's
// grants is its app class (PodAppClass). The usage cache stamps it on the
// grants it decodes, so that a card's devices.Usage counts its online and
// offline pods (HAMi's PodInfos, to which getNodesUsage appends a pod once
// per grant it holds on the card) as Fit's own grants do.
func (v *SGPUVendor) GrantClass(pod *corev1.Pod) devices.AppClass {
	return grantClass(PodAppClass(pod))
}

// runsAppClass reports whether an app-class pod runs on the card.
func runsAppClass(u devices.Usage) bool { return u.Online > 0 || u.Offline > 0 }

// appClassFits is HAMi's checkAppClass for a used card (its usage on, whose
// Online and Offline count the app-class pods on it): a pod with an app
// class joins only cards running app-class pods, a pod without one only
// cards running none, and an offline pod never joins a card running an
// online pod (the device suspends offline work while online work runs).
// An unused card takes any pod (the caller checks).
func appClassFits(class string, on devices.Usage) bool {
	if runsAppClass(on) != (class != "") {
		return false
	}
	return class != Offline || on.Online == 0
}

// appClassCheck is the per-card rule of online and offline pods
// (FitOptions.Check). HAMi's checkAppClass sees the usage that the pod's
// earlier containers add but not their app class: a card only they use
// refuses the container (reported as a vendor rule). Then the standard
// rules (uuid, shares, mutex, memory, cores); an online pod skips the core
// rules and is granted 0 cores, as HAMi's Fit does.
func appClassCheck(online bool, p *devices.Preferences) devices.CardCheck {
	return func(_ int, c *devices.Card, u devices.Usage, r devices.Request, placed devices.Assignment) (devices.Grant, devices.Refusal, bool) {
		if onlyPodUses(c.UUID, u, placed) {
			return devices.Grant{}, devices.RefuseVendor, false
		}
		checked, cores := c, min(r.Cores, 100)
		if online {
			// No core rule binds a card with an unbounded core total.
			open := *c
			open.Cores = math.MaxInt32
			checked, cores = &open, 0
		}
		if why, refused := devices.StandardRefusal(checked, u, &r, p); refused {
			return devices.Grant{}, why, false
		}
		return devices.Grant{UUID: c.UUID, Vendor: SGPUWord, MemoryMiB: r.MemoryOn(c), Cores: cores}, 0, true
	}
}

// onlyPodUses reports whether the card's users are exactly the pod's
// earlier containers' grants on it (placed).
func onlyPodUses(uuid string, u devices.Usage, placed devices.Assignment) bool {
	var mine int32
	placed.Grants(func(g devices.Grant) {
		if g.UUID == uuid {
			mine++
		}
	})
	return mine > 0 && u.Sharers == mine
}

// pickOnline is HAMi's prioritizeOnlineDevices: the cards that passed, in
// walk order, sorted so that cards running only offline pods come last
// (fewer offline pods first among them) and the others by fewer online,
// then fewer offline pods; the first n. used is the cards' usage before
// the pod (the pod's earlier containers count in neither class, as in
// HAMi). HAMi's sort.Slice is an insertion sort, so stable, up to 12
// cards; ties keep walk order here beyond that.
func pickOnline(used []devices.Usage) devices.GroupPicker {
	return func(_ []devices.Card, grants []devices.Grant, picked []int, n int) []devices.Grant {
		if len(grants) <= n {
			return grants[:n:n]
		}
		order := make([]int, len(grants))
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(x, y int) int {
			return onlineRank(used[picked[x]], used[picked[y]])
		})
		out := make([]devices.Grant, n)
		for k := range out {
			out[k] = grants[order[k]]
		}
		return out
	}
}

// onlineRank orders two cards for an online pod (pickOnline).
func onlineRank(a, b devices.Usage) int {
	aOff, bOff := a.Online == 0 && a.Offline > 0, b.Online == 0 && b.Offline > 0
	switch {
	case aOff && bOff:
		return cmp.Compare(a.Offline, b.Offline)
	case aOff:
		return 1
	case bOff:
		return -1
	}
	if c := cmp.Compare(a.Online, b.Online); c != 0 {
		return c
	}
	return cmp.Compare(a.Offline, b.Offline)
}

// scoreOnline is HAMi's scoreOnlineDevices: over the distinct cards of a,
// -100 per offline pod on a card running only offline pods, else -20 per
// online and -2 per offline pod; 0 for idle cards. used is the usage
// before the pod.
func scoreOnline(cards []devices.Card, used []devices.Usage, a devices.Assignment) int {
	score := 0
	for i := range cards {
		if !slices.ContainsFunc(a, func(ctr []devices.Grant) bool {
			return slices.ContainsFunc(ctr, func(g devices.Grant) bool { return g.UUID == cards[i].UUID })
		}) {
			continue
		}
		on := used[i]
		if on.Online == 0 && on.Offline > 0 {
			score -= 100 * int(on.Offline)
		} else {
			score -= 20*int(on.Online) + 2*int(on.Offline)
		}
	}
	return score
}
