package devices

import (
	"strconv"
	"strings"
)

// Refusal is why one card cannot take one container. A Rejection counts
// the cards per refusal; a vendor's CardCheck returns one of the exported
// refusals, the others belong to the shared walk.
type Refusal int

// The refusals, in the order Rejection lists them.
const (
	refuseUnhealthy Refusal = iota
	refuseCordoned
	refuseModel
	RefuseUUID
	refuseMode
	RefuseShares
	RefuseMemory
	RefuseCores
	RefuseExclusive
	RefuseCoresFull
	refuseSlice
	refuseNUMA
	RefuseVendor
	numRefusals
)

var refusalText = [numRefusals]string{
	refuseUnhealthy: "unhealthy",
	refuseCordoned:  "cordoned",
	refuseModel:     "card type not wanted",
	RefuseUUID:      "card uuid not wanted",
	refuseMode:      "sharing mode not wanted",
	RefuseShares:    "all shares in use",
	RefuseMemory:    "insufficient memory",
	RefuseCores:     "insufficient cores",
	RefuseExclusive: "exclusive use conflict",
	RefuseCoresFull: "cores fully used",
	refuseSlice:     "no free MIG slice for the memory",
	refuseNUMA:      "dropped for another NUMA node",
	RefuseVendor:    "vendor rule",
}

// String is the refusal in Filter's words, e.g. "insufficient memory".
func (r Refusal) String() string {
	if r < 0 || r >= numRefusals {
		return "unknown"
	}
	return refusalText[r]
}

// CardCheck is a vendor's per-card rule (FitOptions.Check). ci is the
// container's index, placed the assignment of the earlier containers of
// its phase (init containers: earlier init containers; regular: earlier
// regular containers), u the card's usage as the shared walk sees it. It
// returns the grant the card gives, or ok false and why it refuses.
type CardCheck func(ci int, c *Card, u Usage, r Request, placed Assignment) (g Grant, why Refusal, ok bool)

// StandardRefusal applies the shared per-card rules (uuid, shares,
// exclusive, memory, cores, 100 cores alone, cores full) that FitPod
// applies after health, cordon, type and mode; vendors whose CardCheck
// adds a rule to the standard ones call it.
func StandardRefusal(c *Card, u Usage, r *Request, p *Preferences) (Refusal, bool) {
	return cardRefuses(c, u, r.MemoryOn(c), min(r.Cores, 100), p.Exclusive, p)
}

// Rejection says why a pod does not fit on a node's cards: the first
// container that did not fit and, per reason, how many cards refused it.
type Rejection struct {
	// Container is the index of the container (init containers first), or
	// -1 when the pod as a whole is refused (Unresolvable).
	Container int
	// Cards is the number of cards on the node.
	Cards int
	// Wanted is the number of cards the container asked for.
	Wanted int32
	// Fitting is the number of cards that could take it (fewer than Wanted).
	Fitting int
	// NUMABind is set when the container had to fit on one NUMA node.
	NUMABind bool
	// Unresolvable is set when the pod fits no node whatever the usage,
	// e.g. its annotations are invalid.
	Unresolvable bool
	counts       [numRefusals]int32
	invalid      string
}

// Reason renders the rejection as a short, stable string such as
// "2/8 cards: insufficient memory, 6/8 cards: all shares in use".
func (r *Rejection) Reason() string {
	if r.invalid != "" {
		return r.invalid
	}
	if int(r.Wanted) > r.Cards && r.counts == [numRefusals]int32{} && r.Fitting == 0 {
		return strconv.Itoa(int(r.Wanted)) + " cards wanted, node has " + strconv.Itoa(r.Cards)
	}
	var parts []string
	total := strconv.Itoa(r.Cards)
	for reason, n := range r.counts {
		if n > 0 {
			parts = append(parts, strconv.Itoa(int(n))+"/"+total+" cards: "+refusalText[reason])
		}
	}
	if r.Fitting > 0 {
		where := ""
		if r.NUMABind {
			where = " on one NUMA node"
		}
		parts = append(parts, strconv.Itoa(r.Fitting)+"/"+total+" cards free"+where+", "+strconv.Itoa(int(r.Wanted))+" wanted")
	}
	if len(parts) == 0 {
		return "no card"
	}
	return strings.Join(parts, ", ")
}

// Summary renders the rejection without anything that depends on the
// node (no card counts), e.g. "insufficient memory, all shares in use":
// the reason words, in a fixed order, so that the same cause on different
// nodes reads the same and kube-scheduler's FailedScheduling message can
// count the nodes per reason. Reason keeps the per-node detail.
func (r *Rejection) Summary() string {
	if r.invalid != "" {
		return r.invalid
	}
	if int(r.Wanted) > r.Cards && r.counts == [numRefusals]int32{} && r.Fitting == 0 {
		return "fewer cards than wanted"
	}
	var parts []string
	for reason, n := range r.counts {
		if n > 0 {
			parts = append(parts, refusalText[reason])
		}
	}
	if r.Fitting > 0 {
		if r.NUMABind {
			parts = append(parts, "not enough free cards on one NUMA node")
		} else {
			parts = append(parts, "not enough free cards")
		}
	}
	if len(parts) == 0 {
		return "no card"
	}
	return strings.Join(parts, ", ")
}

// FitPod places every container of req on the node's cards as HAMi v2.10
// does. cards and used are index-aligned; used is not modified. vendor is
// the word written into each Grant. It returns one entry per container
// (empty for containers asking nothing), or a Rejection for the first
// container that does not fit.
//
// Init containers run one at a time before the regular ones: each is fitted
// alone on the node's usage. Regular containers run together: each is
// fitted on the usage left by the node and the regular containers before
// it. Before each container every card gets HAMi's score (cardScore) and
// the cards are sorted by the policy (cardPolicy.key); the walk then tries them
// from the last one backwards and the first that pass win. The regular
// containers share one order, each sort starting from the previous
// container's result, as HAMi's in-place sort does; every init container
// starts from the registered order.
func FitPod(vendor string, cards []Card, used []Usage, req *PodRequest) (Assignment, *Rejection) {
	return FitPodWith(vendor, cards, used, req, FitOptions{})
}

// GroupPicker chooses the cards of a container asking for more than one
// card, for vendors that keep cards together (HAMi's Ascend NetworkID and
// 910C module rules). It gets every card that passed the walk for the
// container, as grants in walk order, with each grant's card index in
// picked, and returns the n it takes; fewer than n refuses the container.
type GroupPicker func(cards []Card, grants []Grant, picked []int, n int) []Grant

// FitOptions are the vendor rules FitPodWith adds to FitPod's.
type FitOptions struct {
	// Pick, when not nil, places every container asking for more than one
	// card instead of taking the first cards that pass: the walk (same
	// scores, order and per-card checks) collects every card that passes,
	// fewer than asked refuses the container, and Pick chooses among them.
	Pick GroupPicker
	// PickAll also hands containers asking for one card to Pick (HAMi's
	// MetaX sGPU prefers a card by its MetaLink zone even for one card).
	PickAll bool
	// CoreTotal, when > 0, is the core total of every card in the per-card
	// checks (free cores, exclusive 100, cores full) instead of Card.Cores;
	// card scores keep Card.Cores. HAMi's Ascend hami-core mode checks
	// against 100 and scores with the registered devcore.
	CoreTotal int32
	// Check, when not nil, replaces the per-card rules that follow the
	// health, cordon, type, mode and NUMA steps (uuid, shares, mutex,
	// memory, cores) and makes the grant; see CardCheck.
	Check CardCheck
}

// FitPodWith is FitPod with a vendor's extra rules (see FitOptions).
func FitPodWith(vendor string, cards []Card, used []Usage, req *PodRequest, opts FitOptions) (Assignment, *Rejection) {
	p := &req.Preferences
	if p.Invalid != "" {
		return nil, &Rejection{Container: -1, Cards: len(cards), Unresolvable: true, invalid: p.Invalid}
	}
	pol := parseCardPolicy(string(p.Policy), p.NUMABind)
	pol.exclusive = pol.exclusive || p.Exclusive
	var orderBuf [16]int
	var keyBuf [16]cardKey
	order, keys := orderBuf[:0], keyBuf[:0]
	if len(cards) > len(orderBuf) {
		order, keys = make([]int, 0, len(cards)), make([]cardKey, 0, len(cards))
	}
	for i := range cards {
		order = append(order, i)
	}
	keys = keys[:len(cards)]
	f := fitter{vendor: vendor, prefs: p, policy: pol, weights: p.Weights.orDefault(), pick: opts.Pick, pickAll: opts.PickAll, coreTotal: opts.CoreTotal, check: opts.Check}

	a := make(Assignment, len(req.Containers))
	inits := max(min(req.Inits, len(req.Containers)), 0)
	for i, r := range req.Containers[:inits] {
		if r.IsZero() {
			continue
		}
		for j := range order {
			order[j] = j
		}
		f.ci, f.placed = i, a[:i]
		grants, rej := f.fitContainer(cards, order, keys, used, &r)
		if rej != nil {
			rej.Container = i
			return nil, rej
		}
		a[i] = grants
		f.takeSlices(cards, grants)
	}
	regular := req.Containers[inits:]
	requesting := 0
	for _, r := range regular {
		if !r.IsZero() {
			requesting++
		}
	}
	if requesting > 1 {
		// Later containers must see what earlier ones took.
		scratch := make([]Usage, len(used))
		copy(scratch, used)
		used = scratch
	}
	for j := range order {
		order[j] = j
	}
	for k, r := range regular {
		if r.IsZero() {
			continue
		}
		i := inits + k
		f.ci, f.placed = i, a[inits:i]
		grants, rej := f.fitContainer(cards, order, keys, used, &r)
		if rej != nil {
			rej.Container = i
			return nil, rej
		}
		a[i] = grants
		f.takeSlices(cards, grants)
		if requesting > 1 {
			for _, g := range grants {
				for ci := range cards {
					if cards[ci].UUID == g.UUID {
						used[ci].Add(g)
					}
				}
			}
		}
	}
	return a, nil
}

// fitter holds what stays the same for every container of one pod.
type fitter struct {
	vendor    string
	prefs     *Preferences
	policy    cardPolicy
	weights   ScoringWeights
	pick      GroupPicker
	pickAll   bool
	coreTotal int32
	check     CardCheck
	// ci and placed are the container being fitted and the assignment of
	// the earlier containers of its phase (for check).
	ci     int
	placed Assignment
	// taken holds, per card, the MIG slices earlier containers of the pod
	// took; nil until one takes a slice.
	taken []uint8
}

// takeSlices marks the MIG slices of a container's grants taken for the
// pod's later containers, init and regular alike. (HAMi places each init
// container on the node's usage alone and the regular ones without the
// init containers' slices, so one pod's slices may overlap; its device
// plugin then cannot create the later instance while the earlier one,
// still reserved, exists.)
func (f *fitter) takeSlices(cards []Card, grants []Grant) {
	for _, g := range grants {
		if g.MIG == nil {
			continue
		}
		m, ok := g.MIG.Placement.mask()
		if !ok {
			continue
		}
		if f.taken == nil {
			f.taken = make([]uint8, len(cards))
		}
		if i := cardIndex(cards, g.UUID); i >= 0 {
			f.taken[i] |= m
		}
	}
}

// occupied is the set of MIG slices card i cannot give: the node's
// reservations and the pod's earlier containers'.
func (f *fitter) occupied(used []Usage, i int) uint8 {
	m := used[i].occupied()
	if f.taken != nil {
		m |= f.taken[i]
	}
	return m
}

// fitContainer picks r.Count distinct cards for one container: it scores
// and sorts the cards, walks them from the last backwards, then settles
// which of the cards that passed the container gets. order holds the card
// indexes in the order of the previous sort and is sorted in place; keys
// is scratch space, one per card.
func (f *fitter) fitContainer(cards []Card, order []int, keys []cardKey, used []Usage, r *Request) ([]Grant, *Rejection) {
	if int(r.Count) > len(cards) && !migRequest(cards, f.prefs) {
		// HAMi checks the count against the node's cards before fitting,
		// unless a mig card may give the container several slices.
		return nil, &Rejection{Cards: len(cards), Wanted: r.Count}
	}
	for i := range cards {
		keys[i] = f.policy.key(&cards[i], used[i], cardScore(f.vendor, &cards[i], used[i], r, f.weights))
	}
	sortCards(order, keys, f.policy.keyLen())
	// Topology-aware and group picks collect every card that passes, then
	// choose.
	grouped := f.pick != nil && (r.Count > 1 || f.pickAll)
	w := cardWalk{collect: f.policy.topology || grouped}
	if f.walk(&w, cards, order, used, r) {
		return w.grants, nil
	}
	return f.settle(&w, cards, used, r, grouped)
}

// cardWalk is what one container's walk over the cards found.
type cardWalk struct {
	// collect keeps the walk going past r.Count cards, for a choice
	// among all the cards that pass.
	collect bool
	grants  []Grant
	// picked (the card index of each grant) is read only by the pickers
	// of a collecting walk; a plain walk keeps none and allocates nothing
	// for it (the pickers are function values, so a buffer on the stack
	// would escape anyway).
	picked []int
	// counts holds, per refusal, the cards that refused the container.
	counts [numRefusals]int32
}

// migRun holds the MIG slices one container took on card, the mig card
// the walk is trying again.
type migRun struct {
	card int
	mask uint8
}

// walk tries the cards in order from the last backwards, recording in w
// each grant and each refusal. It reports true when a walk that does not
// collect has its r.Count cards.
func (f *fitter) walk(w *cardWalk, cards []Card, order []int, used []Usage, r *Request) bool {
	capacity := int(r.Count)
	if w.collect {
		capacity = len(cards)
		w.picked = make([]int, 0, capacity)
	}
	prevNUMA := -1
	mig := migRun{card: -1}
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		c := &cards[i]
		if why, refused := f.unusable(c, used[i]); refused {
			w.counts[why]++
			continue
		}
		if f.policy.numaBind && c.NUMA != prevNUMA {
			// Another NUMA node: the picks so far are dropped.
			if !f.policy.topology {
				w.counts[refuseNUMA] += int32(len(w.grants))
			}
			w.grants, w.picked = w.grants[:0], w.picked[:0]
			prevNUMA = c.NUMA
		}
		g, why, ok := f.grant(c, i, used, r, &mig)
		if !ok {
			w.counts[why]++
			continue
		}
		if w.grants == nil {
			w.grants = make([]Grant, 0, capacity)
		}
		w.grants = append(w.grants, g)
		if w.collect {
			w.picked = append(w.picked, i)
		} else if int32(len(w.grants)) == r.Count {
			return true
		}
		if f.check == nil && c.Mode == ModeMIG {
			// HAMi tries the same mig card again for the next card of the
			// container.
			k++
		}
	}
	return false
}

// unusable applies the walk's first rules, the same for every vendor:
// health, cordon, card type and sharing mode.
func (f *fitter) unusable(c *Card, u Usage) (Refusal, bool) {
	p := f.prefs
	switch {
	case !c.Healthy || u.Faults > 0:
		return refuseUnhealthy, true
	case c.Cordoned:
		return refuseCordoned, true
	case !modelWanted(c.Model, p):
		return refuseModel, true
	case p.Mode != "" && !strings.Contains(p.Mode, c.Mode):
		return refuseMode, true
	}
	return 0, false
}

// grant is what card i gives the container, or why it refuses: the
// vendor's CardCheck when there is one, else the shared per-card rules
// and, on a mig card, a slice (mig holds the slices the container took on
// the card it is trying again).
func (f *fitter) grant(c *Card, i int, used []Usage, r *Request, mig *migRun) (Grant, Refusal, bool) {
	if f.check != nil {
		g, why, ok := f.check(f.ci, c, used[i], *r, f.placed)
		if !ok && (why < 0 || why >= numRefusals) {
			why = RefuseVendor
		}
		return g, why, ok
	}
	mem, cores := r.MemoryOn(c), min(r.Cores, 100)
	checked := c
	if f.coreTotal > 0 {
		cc := *c
		cc.Cores = f.coreTotal
		checked = &cc
	}
	if why, refused := cardRefuses(checked, used[i], mem, cores, f.policy.exclusive, f.prefs); refused {
		return Grant{}, why, false
	}
	g := Grant{UUID: c.UUID, Vendor: f.vendor, MemoryMiB: mem, Cores: cores}
	if c.Mode == ModeMIG {
		// A mig card gives a slice, never a hami-core share: the
		// smallest profile with room for the memory and a free
		// placement, granted the profile's memory and cores.
		if mig.card != i {
			mig.card, mig.mask = i, 0
		}
		prof, pl, m, ok := selectSlice(c, f.occupied(used, i)|mig.mask, mem)
		if !ok {
			return Grant{}, refuseSlice, false
		}
		mig.mask |= m
		g.MemoryMiB, g.Cores, g.MIG = prof.MemoryMiB, prof.Cores, &MIGSlice{Profile: prof.Name, Placement: pl}
	}
	return g, 0, true
}

// settle gives the container its cards from a walk that did not end
// early: a group pick chooses among the cards that passed, a
// topology-aware walk chooses by the cards' links when more than enough
// passed, and too few refuse the container.
func (f *fitter) settle(w *cardWalk, cards []Card, used []Usage, r *Request, grouped bool) ([]Grant, *Rejection) {
	found := int32(len(w.grants))
	switch {
	case !w.collect || found < r.Count:
		return nil, &Rejection{Cards: len(cards), Wanted: r.Count, Fitting: len(w.grants), NUMABind: f.policy.numaBind, counts: w.counts}
	case grouped:
		chosen := f.pick(cards, w.grants, w.picked, int(r.Count))
		if int32(len(chosen)) != r.Count {
			return nil, &Rejection{Cards: len(cards), Wanted: r.Count, Fitting: len(chosen)}
		}
		return chosen, nil
	case found == r.Count:
		return w.grants, nil
	default:
		chosen := chooseByTopology(cards, w.grants, w.picked, int(r.Count))
		f.resettleSlices(cards, used, chosen, r)
		return chosen, nil
	}
}

// maxTopologyCombinations bounds the combinations chooseByTopology scores
// (C(16,8) is 12870; a node would need far more cards to reach it).
const maxTopologyCombinations = 1_000_000

// combinations returns C(n, k), or a value above maxTopologyCombinations
// once it gets that large.
func combinations(n, k int) int {
	k = min(k, n-k)
	c := 1
	for i := 1; i <= k; i++ {
		c = c * (n - k + i) / i
		if c > maxTopologyCombinations {
			return maxTopologyCombinations + 1
		}
	}
	return c
}

// chooseByTopology picks n of the collected grants (walk order) by the
// cards' link scores, as HAMi's topology-aware policy does: for one card,
// the one whose summed score to the other collected cards is lowest; for
// more, the combination with the highest sum of pair scores. The first in
// walk order wins ties; missing scores count 0. picked holds each grant's
// card index.
func chooseByTopology(cards []Card, grants []Grant, picked []int, n int) []Grant {
	links := make([]map[string]int, len(picked))
	for k, i := range picked {
		links[k] = cards[i].LinkScores()
	}
	if n == 1 {
		best, bestScore := 0, 0
		for a := range grants {
			total := 0
			for b := range grants {
				if grants[a].UUID != grants[b].UUID {
					total += links[a][grants[b].UUID]
				}
			}
			if a == 0 || total < bestScore {
				best, bestScore = a, total
			}
		}
		return []Grant{grants[best]}
	}
	if combinations(len(grants), n) > maxTopologyCombinations {
		// HAMi would list every combination and run out of memory; take
		// the first cards walked instead.
		return grants[:n:n]
	}
	// Every n-combination of the collected cards, in lexicographic order.
	comb := make([]int, n)
	best := make([]int, n)
	for k := range comb {
		comb[k] = k
	}
	bestScore, found := -1, false
	for {
		total := 0
		for x := 0; x < n-1; x++ {
			scores := links[comb[x]]
			for y := x + 1; y < n; y++ {
				total += scores[grants[comb[y]].UUID]
			}
		}
		if !found || total > bestScore {
			found, bestScore = true, total
			copy(best, comb)
		}
		// Next combination.
		k := n - 1
		for k >= 0 && comb[k] == len(grants)-n+k {
			k--
		}
		if k < 0 {
			break
		}
		comb[k]++
		for x := k + 1; x < n; x++ {
			comb[x] = comb[x-1] + 1
		}
	}
	out := make([]Grant, n)
	for k, g := range best {
		out[k] = grants[g]
	}
	return out
}

// cardRefuses applies HAMi's per-card rules that follow the health, cordon,
// type and NUMA steps of the walk, in HAMi's order, and reports the first
// one that refuses the container.
func cardRefuses(c *Card, u Usage, mem, cores int32, exclusive bool, p *Preferences) (Refusal, bool) {
	switch {
	case !p.WantsUUID(c.UUID):
		return RefuseUUID, true
	case u.Sharers >= c.Split:
		return RefuseShares, true
	case exclusive && u.Sharers > 0:
		return RefuseExclusive, true
	case int64(c.MemoryMiB)-u.MemoryMiB < int64(mem):
		return RefuseMemory, true
	case int64(c.Cores)-u.Cores < int64(cores):
		return RefuseCores, true
	// 100 cores asks for the card alone.
	case c.Cores == 100 && cores == 100 && u.Sharers > 0:
		return RefuseExclusive, true
	// 0 cores cannot go where every core is already taken.
	case c.Cores != 0 && u.Cores == int64(c.Cores) && cores == 0:
		return RefuseCoresFull, true
	}
	return 0, false
}

func modelWanted(model string, p *Preferences) bool {
	if len(p.UseModels) == 0 && len(p.AvoidModels) == 0 {
		return true
	}
	upper := strings.ToUpper(model)
	if len(p.UseModels) > 0 && !containsAnySubstring(upper, p.UseModels) {
		return false
	}
	return !containsAnySubstring(upper, p.AvoidModels)
}

func containsAnySubstring(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
