package kunlun

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

func limits(name, count string) corev1.Container {
	c := corev1.Container{Name: name}
	if count != "" {
		c.Resources.Limits = corev1.ResourceList{DefaultCountName: resource.MustParse(count)}
	}
	return c
}

func pod(annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annotations}, Spec: corev1.PodSpec{Containers: containers}}
}

func capNode(name string, capacity string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{}}}
	if capacity != "" {
		n.Status.Capacity[DefaultCountName] = resource.MustParse(capacity)
	}
	return n
}

func mustNew(t testing.TB) *Vendor {
	t.Helper()
	v, err := New(devices.Config{Name: "kunlun"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func eight(t testing.TB) []devices.Card {
	cards, err := mustNew(t).Inventory(capNode("node1", "8"))
	if err != nil || len(cards) != 8 {
		t.Fatal(err)
	}
	return cards
}

// usedAt marks the given card indexes as used.
func usedAt(idx ...int) []devices.Usage {
	u := make([]devices.Usage, 8)
	for _, i := range idx {
		u[i] = devices.Usage{Sharers: 1, MemoryMiB: CardMemoryMiB, Cores: 100}
	}
	return u
}

func TestInventory(t *testing.T) {
	v := mustNew(t)
	cards := eight(t)
	want := devices.Card{UUID: "node1-kunlun-5", Index: 5, Split: 100, MemoryMiB: 98304, Cores: 100, Model: "kunlun", NUMA: 1, Mode: "hami-core", Healthy: true}
	if cards[5] != want || cards[3].NUMA != 0 || cards[4].NUMA != 1 {
		t.Errorf("cards = %+v", cards)
	}
	for _, c := range []string{"", "0"} {
		if got, err := v.Inventory(capNode("n", c)); got != nil || err != nil {
			t.Errorf("capacity %q: %+v, %v", c, got, err)
		}
	}
	for _, c := range []string{"1.5", "2000"} {
		if _, err := v.Inventory(capNode("n", c)); err == nil {
			t.Errorf("capacity %q accepted", c)
		}
	}
	if v.InventoryChanged(capNode("n", "8"), capNode("n", "8")) || !v.InventoryChanged(capNode("n", "8"), capNode("n", "4")) {
		t.Error("InventoryChanged")
	}
	to, al := v.AssignmentAnnotations()
	if to != "hami.io/kunlun-allocated" || al != to || v.Name() != "kunlun" || v.NodeLock() != "" {
		t.Errorf("keys %s %s", to, al)
	}
}

// TestFit: HAMi's topology rules, one row each; every row fails if its
// rule is removed.
func TestFit(t *testing.T) {
	v := mustNew(t)
	cards := eight(t)
	for _, tt := range []struct {
		name string
		n    string
		used []devices.Usage
		ann  map[string]string
		want []int // card indexes; nil: refused
	}{
		{"one card: a group with exactly one free first", "1", usedAt(0, 1, 2), nil, []int{3}},
		{"one card: then a group with three free (odd order 1,3,2,4)", "1", usedAt(0, 4, 5), nil, []int{1}},
		{"one card on an idle board: left group", "1", nil, nil, []int{0}},
		{"two cards: the group whose free count equals two", "2", usedAt(0, 1, 4), nil, []int{2, 3}},
		{"two cards: the right group when it fits best", "2", usedAt(0, 6, 7), nil, []int{4, 5}},
		{"two cards across groups: first free cross pair", "2", usedAt(0, 2, 3, 4, 6, 7), nil, []int{1, 5}},
		{"two cards across groups, no free cross pair", "2", usedAt(0, 2, 3, 4, 5, 7), nil, nil},
		{"four cards: a full group", "4", usedAt(0), nil, []int{4, 5, 6, 7}},
		{"four cards, five free: first free quad", "4", usedAt(2, 3, 7), nil, []int{0, 1, 4, 5}},
		{"four cards, five free, no free quad", "4", usedAt(0, 2, 7), nil, nil},
		{"four cards, six free: a quad whose leftovers are linked", "4", usedAt(0, 4), nil, []int{2, 3, 6, 7}},
		{"eight cards on a busy board", "8", usedAt(3), nil, nil},
		{"eight cards on an idle board", "8", nil, nil, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"three cards never", "3", nil, nil, nil},
		{"uuid selectors: hami.io pair", "1", nil, map[string]string{UseUUIDAnnotation: "node1-kunlun-6"}, []int{6}},
		{"uuid selectors: baidu.com pair too", "1", nil, map[string]string{BaiduNoUseUUIDAnnotion: "node1-kunlun-0,node1-kunlun-1,node1-kunlun-2"}, []int{3}},
		{"both use lists must agree", "1", nil, map[string]string{UseUUIDAnnotation: "node1-kunlun-6", BaiduUseUUIDAnnotation: "node1-kunlun-5"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := v.ParsePod(pod(tt.ann, limits("m", tt.n)))
			if err != nil {
				t.Fatal(err)
			}
			used := tt.used
			if used == nil {
				used = make([]devices.Usage, 8)
			}
			a, rej := v.Fit(cards, used, &req)
			var got []int
			if rej == nil {
				for _, g := range a[0] {
					var i int
					fmt.Sscanf(g.UUID, "node1-kunlun-%d", &i)
					got = append(got, i)
					if g.MemoryMiB != 98304 || g.Cores != 100 || g.Vendor != "kunlun" {
						t.Errorf("grant %+v", g)
					}
				}
			}
			want := tt.want
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Fit() = %v (%v), want %v", got, rej, want)
			}
		})
	}
}

func TestFitContainers(t *testing.T) {
	v := mustNew(t)
	cards := eight(t)
	p := pod(nil, limits("a", "4"), limits("b", "4"))
	p.Spec.InitContainers = []corev1.Container{limits("i", "8")}
	req, err := v.ParsePod(p)
	if err != nil || req.Inits != 1 {
		t.Fatal(req, err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, 8), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if len(a[0]) != 8 || a[1][0].UUID != "node1-kunlun-0" || a[2][0].UUID != "node1-kunlun-4" {
		t.Errorf("assignment %s", devices.EncodeAssignment(a))
	}
	p = pod(nil, limits("a", "8"), limits("b", "1"))
	req, _ = v.ParsePod(p)
	if _, rej := v.Fit(cards, make([]devices.Usage, 8), &req); rej == nil || rej.Container != 1 {
		t.Errorf("second container on a full board: %v", rej)
	}
	// Fewer than 8 cards do not crash (HAMi would index past them).
	four, _ := v.Inventory(capNode("n", "4"))
	req, _ = v.ParsePod(pod(nil, limits("a", "2")))
	if a, rej := v.Fit(four, make([]devices.Usage, 4), &req); rej != nil || devices.EncodeAssignment(a) != "n-kunlun-0,kunlun,98304,100:n-kunlun-1,kunlun,98304,100:;" {
		t.Errorf("4-card node: %v %v", devices.EncodeAssignment(a), rej)
	}
}

// TestScorePlacement: HAMi's TestCalcscore rows.
func TestScorePlacement(t *testing.T) {
	v := mustNew(t)
	cards := eight(t)
	grants := func(idx ...int) devices.Assignment {
		var c []devices.Grant
		for _, i := range idx {
			c = append(c, devices.Grant{UUID: cards[i].UUID})
		}
		return devices.Assignment{c}
	}
	for _, tt := range []struct {
		prev, cur []int
		want      float64
	}{
		{[]int{0}, []int{0, 1}, 3000},
		{[]int{0}, []int{4}, 2000},
		{[]int{0, 1}, []int{0}, 1000},
		{[]int{0, 1, 2, 3}, []int{0}, 0},
	} {
		if got := v.ScorePlacement(cards, usedAt(tt.prev...), grants(tt.cur...)); got != tt.want {
			t.Errorf("ScorePlacement(%v, %v) = %v, want %v", tt.prev, tt.cur, got, tt.want)
		}
	}
}

func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t)
	cards := eight(t)
	p := pod(nil, limits("side", ""), limits("main", "2"))
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, 8), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	got := map[string]string{AllocatedAnnotation: devices.EncodeAssignment(a)}
	extras, err := v.AssignmentExtras(p, a, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(got, extras)
	want := map[string]string{
		"hami.io/kunlun-allocated": ";node1-kunlun-0,kunlun,98304,100:node1-kunlun-1,kunlun,98304,100:;",
		"BAIDU_COM_DEVICE_IDX":     "0,1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
	// The last container with cards wins.
	two := devices.Assignment{{{UUID: "n-kunlun-0"}}, {{UUID: "n-kunlun-4"}, {UUID: "n-kunlun-5"}}, nil}
	if ex, _ := v.AssignmentExtras(p, two, time.Now()); ex[DeviceIndexAnnotation] != "4,5" {
		t.Errorf("last container: %v", ex)
	}
}

var smallQuantity = regexp.MustCompile(`^[+-]?[0-9]{1,12}(\.[0-9]{1,6})?([a-zA-Z]{1,2})?$`)

func FuzzInventory(f *testing.F) {
	for _, s := range []string{"8", "4", "0", "1.5", "-1", "2k"} {
		f.Add("node1", s, uint8(0), uint8(1), `[{"id":"xpu-0","index":0,"count":4,"devmem":98304,"devcore":100,"type":"XPU","health":true}]`)
	}
	v := mustNew(f)
	vx := mustVXPU(f)
	f.Fuzz(func(t *testing.T, name, count string, usedMask, n uint8, register string) {
		vn := vnode(register, "4")
		if cards, err := vx.Inventory(vn); err == nil {
			req := devices.PodRequest{Containers: []devices.Request{{Count: int32(n%9) + 1, MemoryMiB: 24576, Cores: 25}}}
			if a, rej := vx.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil && len(a[0]) != int(req.Containers[0].Count) {
				t.Fatalf("%d vXPUs for %d", len(a[0]), req.Containers[0].Count)
			}
		} else if cards != nil {
			t.Fatal("vXPU cards with error")
		}
		if !smallQuantity.MatchString(count) {
			return
		}
		q, err := resource.ParseQuantity(count)
		if err != nil {
			return
		}
		node := capNode(name, "")
		node.Status.Capacity[DefaultCountName] = q
		cards, err := v.Inventory(node)
		if err != nil {
			if cards != nil {
				t.Fatal("cards with error")
			}
			return
		}
		used := make([]devices.Usage, len(cards))
		for i := range used {
			if i < 8 && usedMask&(1<<i) != 0 {
				used[i].Sharers = 1
			}
		}
		req := devices.PodRequest{Containers: []devices.Request{{Count: int32(n%9) + 1, MemoryPercent: 100, Cores: 100}}}
		if a, rej := v.Fit(cards, used, &req); rej == nil {
			if len(a[0]) != int(req.Containers[0].Count) {
				t.Fatalf("%d cards for %d", len(a[0]), req.Containers[0].Count)
			}
			for _, g := range a[0] {
				if !strings.Contains(g.UUID, "-kunlun-") {
					t.Fatal(g)
				}
			}
		}
	})
}

func BenchmarkFit(b *testing.B) {
	v := mustNew(b)
	cards := eight(b)
	for _, bm := range []struct {
		name string
		n    string
		used []devices.Usage
	}{
		{"one card", "1", usedAt(0, 4, 5)},
		{"four cards, six free", "4", usedAt(0, 4)},
	} {
		req, err := v.ParsePod(pod(nil, limits("m", bm.n)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, rej := v.Fit(cards, bm.used, &req); rej != nil {
					b.Fatal(rej.Reason())
				}
			}
		})
	}
}
