package perf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
)

// schedulerProfileSeconds is the length of each piece of the scheduler
// process's CPU profile: its /debug/pprof/profile runs for a set time, so
// a phase of unknown length is profiled in pieces (merge them with
// go tool pprof -proto a b ... > merged).
const schedulerProfileSeconds = 10

// startCPUProfile profiles the phase's CPU into dir, named after the
// cluster size and the phase (e.g. "2000-nodes-hami-backlog-spread"), and
// returns what stops it: this process (the API server, etcd, the simulated
// nodes) into <name>.pprof, and the scheduler process into
// <name>.scheduler-<i>.pprof, one piece per schedulerProfileSeconds (the
// piece under way when the phase ends is dropped). With no dir it does
// nothing.
func startCPUProfile(dir, nodes string, ph Phase, sched *phaseScheduler) (stop func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	size, _, _ := strings.Cut(nodes, " x ")
	name := strings.NewReplacer(" ", "-", "/", "-").Replace(size + " " + ph.Name())
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CPU profile of %s: %w", ph.Name(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var pieces sync.WaitGroup
	pieces.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			piece, err := sched.proc.Get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", schedulerProfileSeconds))
			if err != nil {
				if ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "scheduler CPU profile of %s: %v\n", ph.Name(), err)
				}
				return
			}
			path := filepath.Join(dir, fmt.Sprintf("%s.scheduler-%d.pprof", name, i))
			if err := os.WriteFile(path, piece, 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "scheduler CPU profile of %s: %v\n", ph.Name(), err)
				return
			}
		}
	})
	return func() {
		cancel()
		pieces.Wait()
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
