package nvidia

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// FuzzParsePodThenFit reads a pod built from fuzzed quantities and
// annotations and fits it on a fuzzed register: nothing panics, a request
// is never negative, and a fit never grants more than a card has.
func FuzzParsePodThenFit(f *testing.F) {
	f.Add("2", "3000", "", "30", "binpack,numa", "true", "slot=1,core=1,memory=3", twoCardInventory)
	f.Add("1", "", "50", "", "topology-aware", "", "", docJSONInventory)
	f.Add("0.5", "-1", "101", "1e9", "mutex", "maybe", "slot=0", docLegacyInventory)
	f.Add("9999999999", "2147483647", "0", "100", "", "", "", `[{"id":"GPU-0","count":1,"devmem":1,"devcore":100,"type":"NVIDIA","health":true,"mode":"mig","migProfiles":[{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":0,"size":1}]}]}]`)
	v := mustNew(f, devices.Config{MemoryFactor: 2})
	f.Fuzz(func(t *testing.T, count, mem, pct, cores, policy, numaBind, weights, register string) {
		limits := corev1.ResourceList{}
		for name, value := range map[corev1.ResourceName]string{
			DefaultCountName: count, DefaultMemoryName: mem, DefaultMemoryPercentageName: pct, DefaultCoresName: cores,
		} {
			if q, err := resource.ParseQuantity(value); err == nil {
				limits[name] = q
			}
		}
		p := pod(map[string]string{
			devices.CardPolicyAnnotation:     policy,
			NUMABindAnnotation:               numaBind,
			devices.ScoringWeightsAnnotation: weights,
		}, corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Limits: limits}}, corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Limits: limits}})
		p.Spec.InitContainers, p.Spec.Containers = p.Spec.Containers[:1], p.Spec.Containers[1:]
		req, err := v.ParsePod(p)
		if err != nil {
			return
		}
		for _, r := range req.Containers {
			if r.Count < 0 || r.MemoryMiB < 0 || r.MemoryPercent < 0 || r.MemoryPercent > 100 || r.Cores < 0 {
				t.Fatalf("request out of range: %+v", r)
			}
		}
		cards, err := v.Inventory(node(map[string]string{RegisterAnnotation: register}, res(DefaultCountName, "10")))
		if err != nil || len(cards) == 0 {
			return
		}
		used := make([]devices.Usage, len(cards))
		a, rej := v.Fit(cards, used, &req)
		if rej != nil {
			_ = rej.Reason()
			return
		}
		after := make([]devices.Usage, len(cards))
		devices.ApplyGrants(cards, after, a, req.Inits, true)
		for i, u := range after {
			c := cards[i]
			if u.MemoryMiB > int64(c.MemoryMiB) || u.Sharers > c.Split {
				t.Fatalf("card %s over-committed by one pod: %+v of %+v", c.UUID, u, c)
			}
		}
		if _, err := devices.DecodeAssignment(devices.EncodeAssignment(a)); err != nil {
			t.Fatalf("assignment does not round-trip: %v", err)
		}
	})
}
