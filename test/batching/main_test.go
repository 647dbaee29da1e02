// Package batching checks kube-scheduler's opportunistic batching
// (KEP-5598, the OpportunisticBatching gate, on by default from 1.35) with
// the HAMi plugin in the profile: the plugins sign pods (SignPod), so the
// profile keeps batching, and a batch's reuse of one pod's filtering and
// scoring for the next never places a pod elsewhere than a cycle of its own
// would. Feature gates are process-wide, so these run in a process of
// their own, apart from test/e2e.
package batching

import (
	"os"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/test/util/suite"
)

// logFile receives the control planes' and schedulers' logs.
var logFile *os.File

func TestMain(m *testing.M) {
	os.Exit(suite.RunLogged("hami-batching", "control plane and scheduler logs", func(f *os.File) int {
		logFile = f
		return m.Run()
	}))
}
