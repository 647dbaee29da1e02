package release

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// startSchedulers starts every replica of the hami-scheduler Deployment,
// each with the configuration its ConfigMap holds and a token of its
// ServiceAccount; leader election is as shipped, so one schedules.
func (r *Release) startSchedulers(ctx context.Context) error {
	d, err := r.Deployment("hami-scheduler")
	if err != nil {
		return err
	}
	cm := r.object("ConfigMap", "hami-scheduler-config")
	if cm == nil {
		return fmt.Errorf("the chart renders no ConfigMap hami-scheduler-config")
	}
	data, _, _ := unstructuredString(cm.Object, "data", "scheduler-config.yaml")
	spec := &d.Spec.Template.Spec
	for i := range int(ptr.Deref(d.Spec.Replicas, 1)) {
		name := fmt.Sprintf("hami-scheduler-%d", i)
		dir := mkdir(filepath.Join(r.opts.Dir, name))
		// The other mounted volumes (the device config), and the paths
		// the configuration names in them. (StartSchedulerProcess places
		// the configuration's own ConfigMap.)
		dirs, err := volumeFiles(dir, spec, &spec.Containers[0], r.readVolume(ctx))
		if err != nil {
			return err
		}
		config := moveConfigPaths(data, dirs)
		kubeconfig, err := r.serviceAccountKubeconfig(ctx, r.Namespace, spec.ServiceAccountName, dir)
		if err != nil {
			return err
		}
		p, err := r.cp.StartSchedulerProcess(ctx, r.opts.Scheduler, localcluster.SchedulerProcessOptions{
			Deployment: d, Config: []byte(config), Kubeconfig: kubeconfig, Log: prefixed(logOrDiscard(r.opts.Log), name),
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.Schedulers = append(r.Schedulers, p)
	}
	return nil
}

// moveConfigPaths rewrites, in the scheduler's configuration, the file
// paths under a mount path to its directory, longest mount paths first
// (/etc/hami-device before /etc/hami).
func moveConfigPaths(config string, dirs map[string]string) string {
	mounts := slices.Collect(maps.Keys(dirs))
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		config = strings.ReplaceAll(config, m+"/", dirs[m]+"/")
	}
	return config
}
