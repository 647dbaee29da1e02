package devices

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	// cardSeparator ends each card of a container in an assignment and each
	// card of a legacy register annotation.
	cardSeparator = ":"
	// containerSeparator ends each container of an assignment.
	containerSeparator = ";"
)

// EncodeAssignment writes an assignment in HAMi's pod annotation format:
// per card "uuid,VENDOR,memMiB,cores:" and ";" after every container, empty
// containers included, e.g. ";GPU-0a,NVIDIA,2000,30:GPU-0b,NVIDIA,2000,30:;".
func EncodeAssignment(a Assignment) string {
	var b strings.Builder
	for _, container := range a {
		for _, g := range container {
			b.WriteString(g.UUID)
			b.WriteByte(',')
			b.WriteString(g.Vendor)
			b.WriteByte(',')
			b.WriteString(strconv.FormatInt(int64(g.MemoryMiB), 10))
			b.WriteByte(',')
			b.WriteString(strconv.FormatInt(int64(g.Cores), 10))
			b.WriteString(cardSeparator)
		}
		b.WriteString(containerSeparator)
	}
	return b.String()
}

// DecodeAssignment reads an assignment written by EncodeAssignment (or by
// HAMi). Empty container entries are kept so that indexes match containers;
// the terminator after the last container does not add an entry.
func DecodeAssignment(s string) (Assignment, error) {
	if s == "" {
		return Assignment{}, nil
	}
	parts := strings.Split(s, containerSeparator)
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	a := make(Assignment, 0, len(parts))
	for i, part := range parts {
		grants, err := decodeContainerGrants(part)
		if err != nil {
			return nil, fmt.Errorf("container %d: %w", i, err)
		}
		a = append(a, grants)
	}
	return a, nil
}

func decodeContainerGrants(s string) ([]Grant, error) {
	var grants []Grant
	for card := range strings.SplitSeq(s, cardSeparator) {
		if card == "" {
			continue
		}
		g, err := decodeGrant(card)
		if err != nil {
			return nil, err
		}
		grants = append(grants, g)
	}
	return grants, nil
}

func decodeGrant(s string) (Grant, error) {
	fields := strings.Split(s, ",")
	if len(fields) != 4 {
		return Grant{}, fmt.Errorf("card %q: want 4 comma-separated fields uuid,vendor,memory,cores, got %d", s, len(fields))
	}
	if fields[0] == "" {
		return Grant{}, fmt.Errorf("card %q: empty uuid", s)
	}
	mem, err := parseNonNegative(fields[2], "memory")
	if err != nil {
		return Grant{}, fmt.Errorf("card %q: %w", s, err)
	}
	cores, err := parseNonNegative(fields[3], "cores")
	if err != nil {
		return Grant{}, fmt.Errorf("card %q: %w", s, err)
	}
	return Grant{UUID: fields[0], Vendor: fields[1], MemoryMiB: mem, Cores: cores}, nil
}

func parseNonNegative(s, what string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a 32-bit integer", what, s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%s %d is negative", what, v)
	}
	return int32(v), nil
}
