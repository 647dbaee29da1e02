package kueue

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// The shipped binary runs the check with --hami-kueue-card-fit, as the
// chart's kueue.admissionCheck.enabled starts it: with the shipped
// configuration's leader election, it starts answering once the process
// leads (kube-scheduler's leader-election gauge), and a Job that fits is
// passed and runs.
func TestShippedBinaryAnswers(t *testing.T) {
	e := newEnv(t, "kueue-binary")
	bin := filepath.Join(t.TempDir(), "hami-scheduler")
	build := exec.Command("go", "build", "-o", bin, "./cmd/hami-scheduler")
	build.Dir = manifestgen.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build hami-scheduler: %v\n%s", err, out)
	}
	e.addNodes("1 node x 2 cards of NVIDIA A100 40 GiB")
	e.queue(2, checkName)

	sched.Stop()
	t.Cleanup(func() {
		var err error
		if sched, err = localcluster.StartScheduler(context.Background(), controlPlane.Config, localcluster.SchedulerOptions{CardFit: &checkOptions}); err != nil {
			t.Fatal(err)
		}
	})
	p, err := controlPlane.StartSchedulerProcess(e.ctx, bin, localcluster.SchedulerProcessOptions{
		ExtraArgs: []string{"--hami-kueue-card-fit", "--hami-kueue-card-fit-retry=1s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)

	w := e.watchWorkloads()
	e.job("fits", 2, card{count: 1, memory: 20000})
	e.until(w, "fits", "the binary's check passes the workload", checkIs("Ready"), checkIs("Retry"))
	e.until(w, "fits", "the workload is admitted", admitted, nil)
	for _, pod := range e.waitRunning("job-name=fits", 2) {
		checkOnHAMi(t, &pod)
	}
}
