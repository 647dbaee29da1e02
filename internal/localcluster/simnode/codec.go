package simnode

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// containerDevice is one card of one container in hami.io/vgpu-devices-to-allocate,
// as HAMi's device plugin decodes it.
type containerDevice struct {
	UUID      string
	Type      string
	MemoryMiB int32
	Cores     int32
}

// decodeToAllocate reads a to-allocate value the way HAMi v2.10's device
// plugin does (device.DecodePodDevices): every ";"-separated piece is one
// entry, the empty piece after the final ";" included, and within a piece
// every ":"-separated item that contains a "," is a card of at least four
// fields uuid,type,memory,cores.
func decodeToAllocate(s string) ([][]containerDevice, error) {
	var entries [][]containerDevice
	for piece := range strings.SplitSeq(s, ";") {
		var devs []containerDevice
		for item := range strings.SplitSeq(piece, ":") {
			if !strings.Contains(item, ",") {
				continue
			}
			f := strings.Split(item, ",")
			if len(f) < 4 {
				return nil, fmt.Errorf("card %q: want uuid,type,memory,cores", item)
			}
			mem, err := strconv.ParseInt(f[2], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("card %q: invalid memory field: %v", item, err)
			}
			cores, err := strconv.ParseInt(f[3], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("card %q: invalid core field: %v", item, err)
			}
			devs = append(devs, containerDevice{UUID: f[0], Type: f[1], MemoryMiB: int32(mem), Cores: int32(cores)})
		}
		entries = append(entries, devs)
	}
	return entries, nil
}

// encodeToAllocate writes entries back as HAMi's device plugin does
// (device.EncodePodSingleDevice): each card "uuid,type,mem,cores:" and a
// ";" after every entry.
func encodeToAllocate(entries [][]containerDevice) string {
	var b strings.Builder
	for _, devs := range entries {
		for _, d := range devs {
			fmt.Fprintf(&b, "%s,%s,%d,%d:", d.UUID, d.Type, d.MemoryMiB, d.Cores)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// eraseNext serves the next container of a to-allocate value as HAMi
// v2.10's Allocate does: it empties the first entry that lists cards and
// re-encodes the rest. Because the empty piece after the final ";" is
// decoded as an entry of its own, every call adds one empty entry:
// "GPU-a,NVIDIA,2000,30:;" becomes ";;". served is nil when no entry lists
// a card.
func eraseNext(value string) (rest string, served []containerDevice, err error) {
	entries, err := decodeToAllocate(value)
	if err != nil {
		return "", nil, err
	}
	for i, devs := range entries {
		if len(devs) > 0 {
			entries[i] = nil
			return encodeToAllocate(entries), devs, nil
		}
	}
	return value, nil, nil
}

// parseLock reads a hami.io/mutex.lock value as HAMi's device plugin does
// (nodelock.ParseNodeLock): "RFC3339,namespace,pod", or a bare RFC3339 time
// with no holder.
func parseLock(value string) (taken time.Time, namespace, name string, err error) {
	if !strings.Contains(value, ",") {
		taken, err = time.Parse(time.RFC3339, value)
		return taken, "", "", err
	}
	parts := strings.Split(value, ",")
	if len(parts) != 3 {
		return time.Time{}, "", "", fmt.Errorf("malformed lock %q: want time,namespace,pod", value)
	}
	taken, err = time.Parse(time.RFC3339, parts[0])
	return taken, parts[1], parts[2], err
}

// lockHeldBy reports whether a lock value may be released by the pod: it
// names the pod, or it is a legacy lock with no holder.
func lockHeldBy(value, namespace, name string) bool {
	if !strings.Contains(value, ",") {
		return true
	}
	return strings.HasSuffix(value, ","+namespace+","+name)
}

// eraseFirstListed serves the next container as the plugins built on
// HAMi's older decoder do (Hygon, Biren, AMD): entries that list no card
// are dropped, the first one left is served, and the rest re-encoded as
// ";" then each entry and ";" (all served: ";"). served is nil when no
// entry lists a card.
func eraseFirstListed(value string) (rest string, served []containerDevice, err error) {
	entries, err := decodeToAllocate(value)
	if err != nil {
		return "", nil, err
	}
	listed := entries[:0]
	for _, e := range entries {
		if len(e) > 0 {
			listed = append(listed, e)
		}
	}
	if len(listed) == 0 {
		return value, nil, nil
	}
	return ";" + encodeToAllocate(listed[1:]), listed[0], nil
}
