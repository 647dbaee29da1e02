package devices

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// registeredCard is one element of the JSON register annotation. Every field
// is omitempty on the writer's side, so absent means zero (and, for health,
// unhealthy). encoding/json matches keys case-insensitively.
type registeredCard struct {
	ID      string `json:"id"`
	Index   int    `json:"index"`
	Count   int32  `json:"count"`
	Devmem  int32  `json:"devmem"`
	Devcore int32  `json:"devcore"`
	Type    string `json:"type"`
	Numa    int    `json:"numa"`
	Mode    string `json:"mode"`
	Health  bool   `json:"health"`
	// MIGProfiles is written in mig mode only (hami-protocol 7).
	MIGProfiles []registeredMIGProfile `json:"migProfiles"`
}

// registeredMIGProfile is one element of a card's migProfiles (HAMi's
// device.MigProfile). Counts are unsigned there: a negative one fails the
// whole annotation, as in HAMi.
type registeredMIGProfile struct {
	Name       string         `json:"name"`
	MemoryMB   int32          `json:"memoryMB"`
	Core       int32          `json:"core"`
	SliceCount uint32         `json:"sliceCount"`
	Placements []MIGPlacement `json:"placements"`
}

// DefaultMode is the sharing mode of a card that names none.
const DefaultMode = "hami-core"

// DecodeInventory reads a register annotation: the JSON array written by
// HAMi >= v2.8 first, then the legacy "id,count,devmem,devcore,type,numa,
// health[,index,mode]:" form. It never panics; anything else is an error
// that says what is wrong.
func DecodeInventory(s string) ([]Card, error) {
	trimmed := strings.TrimSpace(s)
	if trimmed == "" {
		return nil, fmt.Errorf("register annotation is empty")
	}
	var cards []Card
	var err error
	if strings.HasPrefix(trimmed, "{") {
		return nil, fmt.Errorf("register annotation is a single JSON object; want a JSON array of cards")
	}
	if strings.HasPrefix(trimmed, "[") {
		cards, err = decodeJSONInventory(trimmed)
	} else {
		cards, err = decodeLegacyInventory(trimmed)
	}
	if err != nil {
		return nil, err
	}
	return normalizeInventory(cards)
}

func decodeJSONInventory(s string) ([]Card, error) {
	var registered []registeredCard
	if err := json.Unmarshal([]byte(s), &registered); err != nil {
		return nil, fmt.Errorf("register annotation is not a JSON array of cards: %v", err)
	}
	cards := make([]Card, 0, len(registered))
	for _, r := range registered {
		mode := r.Mode
		if mode == "" {
			mode = DefaultMode
		}
		var profiles []MIGProfile
		for _, p := range r.MIGProfiles {
			profiles = append(profiles, MIGProfile{Name: p.Name, MemoryMiB: p.MemoryMB, Cores: p.Core, SliceCount: p.SliceCount, Placements: p.Placements})
		}
		cards = append(cards, Card{
			UUID: r.ID, Index: r.Index, Split: r.Count, MemoryMiB: r.Devmem, Cores: r.Devcore,
			Model: r.Type, NUMA: r.Numa, Mode: mode, Healthy: r.Health,
			MIG: normalizeMIGProfiles(profiles),
		})
	}
	return cards, nil
}

func decodeLegacyInventory(s string) ([]Card, error) {
	if !strings.Contains(s, cardSeparator) {
		return nil, fmt.Errorf("register annotation is neither a JSON array nor legacy cards ending in %q", cardSeparator)
	}
	var cards []Card
	for entry := range strings.SplitSeq(s, cardSeparator) {
		if entry == "" {
			continue
		}
		c, err := decodeLegacyCard(entry)
		if err != nil {
			return nil, err
		}
		cards = append(cards, c)
	}
	return cards, nil
}

func decodeLegacyCard(entry string) (Card, error) {
	f := strings.Split(entry, ",")
	if len(f) != 7 && len(f) != 9 {
		return Card{}, fmt.Errorf("legacy card %q: want 7 or 9 fields, got %d", entry, len(f))
	}
	split, err := parseInt32(f[1], "count")
	if err != nil {
		return Card{}, fmt.Errorf("legacy card %q: %w", entry, err)
	}
	mem, err := parseInt32(f[2], "devmem")
	if err != nil {
		return Card{}, fmt.Errorf("legacy card %q: %w", entry, err)
	}
	cores, err := parseInt32(f[3], "devcore")
	if err != nil {
		return Card{}, fmt.Errorf("legacy card %q: %w", entry, err)
	}
	numa, err := strconv.Atoi(f[5])
	if err != nil {
		return Card{}, fmt.Errorf("legacy card %q: numa %q is not an integer", entry, f[5])
	}
	healthy, err := strconv.ParseBool(f[6])
	if err != nil {
		return Card{}, fmt.Errorf("legacy card %q: health %q is not a boolean", entry, f[6])
	}
	c := Card{UUID: f[0], Split: split, MemoryMiB: mem, Cores: cores, Model: f[4], NUMA: numa, Healthy: healthy, Mode: DefaultMode}
	if len(f) == 9 {
		idx, err := parseNonNegative(f[7], "index")
		if err != nil {
			return Card{}, fmt.Errorf("legacy card %q: %w", entry, err)
		}
		c.Index = int(idx)
		if f[8] != "" {
			c.Mode = f[8]
		}
	}
	return c, nil
}

// normalizeInventory checks the decoded cards and settles what HAMi
// tolerates:
//   - a later card with the UUID of an earlier one is dropped. HAMi keeps
//     both, may then give both to one container (the same UUID twice in the
//     assignment) and books the usage of either on the first; keeping the
//     first alone is the safe equivalent;
//   - a card with a negative count, devmem or devcore is kept as unhealthy:
//     HAMi never places on a negative count or devcore, and a negative
//     devmem would let it grant negative memory;
//   - a negative numa is kept: it is only an ordering key.
//
// A negative index fails the node as in HAMi (its JSON field is unsigned,
// and its legacy decoder refuses it), as do a missing id and an id that
// would break the assignment encoding.
func normalizeInventory(cards []Card) ([]Card, error) {
	if len(cards) == 0 {
		return nil, fmt.Errorf("register annotation lists no card")
	}
	out := cards[:0]
	for i, c := range cards {
		switch {
		case c.UUID == "":
			return nil, fmt.Errorf("card %d has no id", i)
		case c.Index < 0:
			return nil, fmt.Errorf("card %s has a negative index %d", c.UUID, c.Index)
		case strings.ContainsAny(c.UUID, ",:;"):
			return nil, fmt.Errorf("card id %q contains a separator (, : or ;)", c.UUID)
		}
		if c.Split < 0 || c.MemoryMiB < 0 || c.Cores < 0 {
			c.Healthy = false
		}
		dup := false
		for _, kept := range out {
			if kept.UUID == c.UUID {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, c)
		}
	}
	return out, nil
}

func parseInt32(s, what string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a 32-bit integer", what, s)
	}
	return int32(v), nil
}

// ApplyCordon marks the cards named in a hami.io/device-cordon value (a
// comma-separated list of UUIDs) as cordoned.
func ApplyCordon(cards []Card, cordon string) {
	if strings.TrimSpace(cordon) == "" {
		return
	}
	for id := range strings.SplitSeq(cordon, ",") {
		id = strings.TrimSpace(id)
		for i := range cards {
			if cards[i].UUID == id {
				cards[i].Cordoned = true
			}
		}
	}
}
