package metax

import (
	"maps"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// The shapes of HAMi's examples/metax/sgpu/online.yaml and offline.yaml
// (one sGPU, 4 GiB; offline also 60% of the compute), and a pod without
// app class.
var (
	onlineCtr  = limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "4")
	offlineCtr = limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vcore", "60", "metax-tech.com/vmemory", "4")
	plainCtr   = limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "4", "metax-tech.com/vcore", "30")
)

// The pod annotations after HAMi's webhook: offline and plain pods get
// best-effort, online pods no policy.
var (
	onlineAnn  = map[string]string{AppClassAnnotation: Online}
	offlineAnn = map[string]string{AppClassAnnotation: Offline, QoSPolicyAnnotation: BestEffort}
	plainAnn   = map[string]string{QoSPolicyAnnotation: BestEffort}
)

// What one card holds: its usage, whose Online and Offline count the
// app-class pods on it.
var (
	idle        = devices.Usage{}
	plainWork   = devices.Usage{Sharers: 1, MemoryMiB: 4096, Cores: 30}
	onlineWork  = devices.Usage{Sharers: 1, MemoryMiB: 4096, Online: 1}
	offlineWork = devices.Usage{Sharers: 1, MemoryMiB: 4096, Cores: 60, Offline: 1}
	mixedWork   = devices.Usage{Sharers: 2, MemoryMiB: 8192, Cores: 60, Online: 1, Offline: 1}
	// An offline pod without vcore holds every core.
	offlineAll = devices.Usage{Sharers: 1, MemoryMiB: 4096, Cores: 100, Offline: 1}
)

// TestSGPUAppClassFit: HAMi's Fit for online and offline pods and its card
// sharing rules between app-class pods and the others; each row fails if
// its rule is removed.
func TestSGPUAppClassFit(t *testing.T) {
	one := []devices.Card{sgpu("GPU-0", 0, BestEffort)}
	tests := []struct {
		name       string
		ann        map[string]string
		ctrs       []corev1.Container
		cards      []devices.Card
		held       []devices.Usage
		want       string
		wantReason string
	}{
		// HAMi's examples on an unused card, which takes any pod.
		{name: "online.yaml: 4 GiB, granted 0 cores", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr}, cards: one, held: []devices.Usage{idle},
			want: "GPU-0,Metax-SGPU,4096,0:;"},
		{name: "offline.yaml: 4 GiB, 60 cores", ann: offlineAnn, ctrs: []corev1.Container{offlineCtr}, cards: one, held: []devices.Usage{idle},
			want: "GPU-0,Metax-SGPU,4096,60:;"},

		// Sharing (HAMi's checkAppClass).
		{name: "online joins online work", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr}, cards: one, held: []devices.Usage{onlineWork},
			want: "GPU-0,Metax-SGPU,4096,0:;"},
		{name: "online joins offline work", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr}, cards: one, held: []devices.Usage{offlineWork},
			want: "GPU-0,Metax-SGPU,4096,0:;"},
		{name: "online refused by work without app class", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr}, cards: one, held: []devices.Usage{plainWork},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "offline joins offline work", ann: offlineAnn, ctrs: []corev1.Container{offlineCtr}, cards: one,
			held: []devices.Usage{{Sharers: 1, MemoryMiB: 4096, Cores: 30, Offline: 1}}, want: "GPU-0,Metax-SGPU,4096,60:;"},
		{name: "offline refused by online work", ann: offlineAnn, ctrs: []corev1.Container{offlineCtr}, cards: one, held: []devices.Usage{onlineWork},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "offline refused by online and offline work", ann: offlineAnn, ctrs: []corev1.Container{limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vcore", "10")}, cards: one, held: []devices.Usage{mixedWork},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "offline refused by work without app class", ann: offlineAnn, ctrs: []corev1.Container{offlineCtr}, cards: one, held: []devices.Usage{plainWork},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "no app class: refused by online work", ann: plainAnn, ctrs: []corev1.Container{plainCtr}, cards: one, held: []devices.Usage{onlineWork},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "no app class: refused by offline work", ann: plainAnn, ctrs: []corev1.Container{plainCtr}, cards: one, held: []devices.Usage{offlineWork},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "no app class: joins work without app class", ann: plainAnn, ctrs: []corev1.Container{plainCtr}, cards: one, held: []devices.Usage{plainWork},
			want: "GPU-0,Metax-SGPU,4096,30:;"},

		// Online pods skip the QoS and core rules, not the others.
		{name: "online: no QoS rule", ann: map[string]string{AppClassAnnotation: Online, QoSPolicyAnnotation: BestEffort}, ctrs: []corev1.Container{onlineCtr},
			cards: []devices.Card{sgpu("GPU-0", 0, FixedShare)}, held: []devices.Usage{onlineWork}, want: "GPU-0,Metax-SGPU,4096,0:;"},
		{name: "online: no core rule (offline work holds every core)", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr}, cards: one, held: []devices.Usage{offlineAll},
			want: "GPU-0,Metax-SGPU,4096,0:;"},
		{name: "online: memory", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr}, cards: one,
			held: []devices.Usage{{Sharers: 1, MemoryMiB: 63488, Online: 1}}, wantReason: "1/1 cards: insufficient memory"},
		{name: "online: shares", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr}, cards: one,
			held: []devices.Usage{{Sharers: 16, Online: 16}}, wantReason: "1/1 cards: all shares in use"},
		{name: "online: mutex", ann: map[string]string{AppClassAnnotation: Online, devices.CardPolicyAnnotation: "mutex"}, ctrs: []corev1.Container{onlineCtr},
			cards: one, held: []devices.Usage{onlineWork}, wantReason: "1/1 cards: exclusive use conflict"},
		{name: "online: uuid selector", ann: map[string]string{AppClassAnnotation: Online, SGPUAvoidUUIDAnnotation: "GPU-0"}, ctrs: []corev1.Container{onlineCtr},
			cards: one, held: []devices.Usage{idle}, wantReason: "1/1 cards: card uuid not wanted"},
		// Offline pods keep them.
		{name: "offline: QoS rule", ann: offlineAnn, ctrs: []corev1.Container{offlineCtr}, cards: []devices.Card{sgpu("GPU-0", 0, FixedShare)},
			held: []devices.Usage{{Sharers: 1, MemoryMiB: 4096, Cores: 30, Offline: 1}}, wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "offline: free cores", ann: offlineAnn, ctrs: []corev1.Container{offlineCtr}, cards: one, held: []devices.Usage{offlineWork},
			wantReason: "1/1 cards: insufficient cores"},
		{name: "offline without vcore: exclusive", ann: offlineAnn, ctrs: []corev1.Container{limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "4")}, cards: one,
			held: []devices.Usage{{Sharers: 1, MemoryMiB: 4096, Offline: 1}}, wantReason: "1/1 cards: exclusive use conflict"},

		// The choice among the cards that pass.
		{name: "online: the card with the fewest online pods, not one with only offline work", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr},
			cards: []devices.Card{sgpu("GPU-a", 0, ""), sgpu("GPU-b", 0, ""), sgpu("GPU-c", 0, "")},
			held: []devices.Usage{
				{Sharers: 2, MemoryMiB: 8192, Online: 2},
				{Sharers: 2, MemoryMiB: 8192, Cores: 60, Online: 1, Offline: 1},
				{Sharers: 1, MemoryMiB: 4096, Cores: 60, Offline: 1},
			},
			want: "GPU-b,Metax-SGPU,4096,0:;"},
		{name: "offline exclusive: the first card walked, no MetaLink choice", ann: offlineAnn, ctrs: []corev1.Container{limits("m", "metax-tech.com/sgpu", "1")},
			cards: []devices.Card{sgpu("GPU-5", 2, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-1", 1, "")}, held: []devices.Usage{idle, idle, idle},
			want: "GPU-1,Metax-SGPU,65536,100:;"},
		{name: "no app class, exclusive: MetaLink choice", ann: plainAnn, ctrs: []corev1.Container{limits("m", "metax-tech.com/sgpu", "1")},
			cards: []devices.Card{sgpu("GPU-5", 2, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-1", 1, "")}, held: []devices.Usage{idle, idle, idle},
			want: "GPU-5,Metax-SGPU,65536,100:;"},

		// HAMi's checkAppClass sees the pod's earlier containers as usage
		// without app class.
		{name: "two online containers: a card only the pod uses refuses the second", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr, onlineCtr}, cards: one, held: []devices.Usage{idle},
			wantReason: "1/1 cards: vendor rule"},
		{name: "two online containers share a card running online work", ann: onlineAnn, ctrs: []corev1.Container{onlineCtr, onlineCtr}, cards: one, held: []devices.Usage{onlineWork},
			want: "GPU-0,Metax-SGPU,4096,0:;GPU-0,Metax-SGPU,4096,0:;"},
		{name: "two offline containers on two idle cards", ann: offlineAnn, ctrs: []corev1.Container{offlineCtr, offlineCtr},
			cards: []devices.Card{sgpu("GPU-0", 0, ""), sgpu("GPU-1", 0, "")}, held: []devices.Usage{idle, idle},
			want: "GPU-1,Metax-SGPU,4096,60:;GPU-0,Metax-SGPU,4096,60:;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustSGPU(t, SGPUConfig{})
			req, err := v.ParsePod(pod(tt.ann, tt.ctrs...))
			if err != nil {
				t.Fatal(err)
			}
			a, rej := v.Fit(tt.cards, tt.held, &req)
			if tt.wantReason != "" {
				if rej == nil || rej.Reason() != tt.wantReason {
					t.Fatalf("Fit() = %v, %v; want rejection %q", a, rej, tt.wantReason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("Fit() rejected: %s", rej.Reason())
			}
			if got := devices.EncodeAssignment(a); got != tt.want {
				t.Errorf("Fit() = %s, want %s", got, tt.want)
			}
			// The grants carry the pod's class, which the usage counts.
			wantClass := v.GrantClass(pod(tt.ann))
			a.Grants(func(g devices.Grant) {
				if g.Class != wantClass {
					t.Errorf("grant %s: class %d, want %d", g.UUID, g.Class, wantClass)
				}
			})
		})
	}
}

// TestSGPUGrantClass: the class of a pod's grants is its app class (what
// the usage cache stamps on decoded grants), and Fit's grants carry it.
func TestSGPUGrantClass(t *testing.T) {
	v := mustSGPU(t, SGPUConfig{})
	for _, tt := range []struct {
		ann  map[string]string
		want devices.AppClass
	}{
		{onlineAnn, devices.AppClassOnline},
		{offlineAnn, devices.AppClassOffline},
		{plainAnn, devices.AppClassNone},
		{map[string]string{AppClassAnnotation: "batch"}, devices.AppClassNone},
	} {
		if got := v.GrantClass(pod(tt.ann)); got != tt.want {
			t.Errorf("GrantClass(%v) = %d, want %d", tt.ann, got, tt.want)
		}
	}
	if got := v.GrantClass(nil); got != devices.AppClassNone {
		t.Errorf("GrantClass(nil) = %d", got)
	}
	cards := []devices.Card{sgpu("GPU-0", 0, BestEffort)}
	req, err := v.ParsePod(pod(onlineAnn, onlineCtr))
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, 1), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	used := make([]devices.Usage, 1)
	devices.ApplyGrants(cards, used, a, 0, true)
	if want := (devices.Usage{Sharers: 1, MemoryMiB: 4096, Online: 1}); used[0] != want {
		t.Errorf("usage after the online pod = %+v, want %+v", used[0], want)
	}
	devices.ApplyGrants(cards, used, a, 0, false)
	if used[0] != (devices.Usage{}) {
		t.Errorf("usage after removing it = %+v", used[0])
	}
}

// TestAppClassFits: HAMi's TestCheckAppClass rows on used cards (an
// unused card takes any pod: see TestSGPUAppClassFit).
func TestAppClassFits(t *testing.T) {
	for _, tt := range []struct {
		name  string
		class string
		on    devices.Usage
		want  bool
	}{
		{"no app class, online work", "", devices.Usage{Online: 1}, false},
		{"no app class, offline work", "", devices.Usage{Offline: 1}, false},
		{"no app class, work without app class", "", devices.Usage{}, true},
		{"online, work without app class", Online, devices.Usage{}, false},
		{"online, online and offline work", Online, devices.Usage{Online: 1, Offline: 1}, true},
		{"offline, online and offline work", Offline, devices.Usage{Online: 1, Offline: 1}, false},
		{"offline, offline work", Offline, devices.Usage{Offline: 2}, true},
	} {
		if got := appClassFits(tt.class, tt.on); got != tt.want {
			t.Errorf("%s: appClassFits() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPickOnline: HAMi's TestPrioritizeOnlineDevices rows (candidates in
// walk order, one card asked).
func TestPickOnline(t *testing.T) {
	for _, tt := range []struct {
		name string
		on   []devices.Usage
		want int
	}{
		{"idle card", []devices.Usage{{}, {Online: 1}, {Online: 2}, {Online: 1, Offline: 1}, {Online: 2, Offline: 1}, {Offline: 1}, {Offline: 2}}, 0},
		{"only online", []devices.Usage{{Online: 1}, {Online: 2}, {Online: 3, Offline: 1}, {Offline: 2}}, 0},
		{"online and offline", []devices.Usage{{Online: 3}, {Online: 1, Offline: 1}, {Online: 2, Offline: 1}, {Offline: 1}, {Offline: 2}}, 1},
		{"only offline", []devices.Usage{{Offline: 1}, {Offline: 2}}, 0},
		{"only offline, fewer offline first", []devices.Usage{{Offline: 2}, {Offline: 1}}, 1},
	} {
		cards := make([]devices.Card, len(tt.on))
		grants := make([]devices.Grant, len(tt.on))
		picked := make([]int, len(tt.on))
		for i := range cards {
			cards[i] = sgpu("GPU-"+string(rune('1'+i)), 0, "")
			grants[i] = devices.Grant{UUID: cards[i].UUID}
			picked[i] = i
		}
		got := pickOnline(tt.on)(cards, grants, picked, 1)
		if len(got) != 1 || got[0].UUID != cards[tt.want].UUID {
			t.Errorf("%s: pickOnline() = %v, want %s", tt.name, got, cards[tt.want].UUID)
		}
	}
}

// TestSGPUScoreAppClasses: HAMi's TestScoreOnlineDevices rows (the
// classes counted in the usage before the pod), and the topology score
// kept for offline pods.
func TestSGPUScoreAppClasses(t *testing.T) {
	four := []devices.Card{sgpu("GPU-1", 1, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-3", 1, ""), sgpu("GPU-4", 1, "")}
	onOne := devices.Assignment{{{UUID: "GPU-1", MemoryMiB: 4096}}}
	on := mustSGPU(t, SGPUConfig{TopologyAware: true})
	online, offline := pod(onlineAnn), pod(offlineAnn)
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		used []devices.Usage
		a    devices.Assignment
		want float64
	}{
		{"online, idle card", online, []devices.Usage{{}}, onOne, 0},
		{"online, two online pods", online, []devices.Usage{{Sharers: 2, Online: 2}}, onOne, -40},
		{"online, two offline pods only", online, []devices.Usage{{Sharers: 2, Offline: 2}}, onOne, -200},
		{"online, two online and two offline pods", online, []devices.Usage{{Sharers: 4, Online: 2, Offline: 2}}, onOne, -44},
		{"online, a card counted once", online, []devices.Usage{{Sharers: 2, Online: 2}}, devices.Assignment{{{UUID: "GPU-1"}}, {{UUID: "GPU-1"}}}, -40},
		{"online, two cards", online, []devices.Usage{{Sharers: 1, Online: 1}, {Sharers: 1, Offline: 1}}, devices.Assignment{{{UUID: "GPU-1"}}, {{UUID: "GPU-2"}}}, -120},
		{"online, work without app class", online, []devices.Usage{{Sharers: 3}}, onOne, 0},
		{"offline exclusive on idle cards: the topology score", offline, nil, devices.Assignment{{{UUID: "GPU-4", Cores: 100}}}, -30},
	} {
		used := make([]devices.Usage, len(four))
		copy(used, tt.used)
		if got := on.ScorePlacement(tt.pod, four, used, tt.a); got != tt.want {
			t.Errorf("%s: ScorePlacement() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPodAppClass(t *testing.T) {
	if PodAppClass(nil) != "" || PodAppClass(pod(map[string]string{AppClassAnnotation: "batch"})) != "" || PodAppClass(pod(onlineAnn)) != Online {
		t.Error("PodAppClass")
	}
}

// TestSGPUHAMiExamples: HAMi's examples/metax/sgpu/online.yaml and
// offline.yaml through the webhook, the fit and the annotations, then the
// card sharing that follows on one card.
func TestSGPUHAMiExamples(t *testing.T) {
	v := mustSGPU(t, SGPUConfig{})
	cards, err := v.Inventory(annNode(SGPURegisterAnnotation, specSGPUs))
	if err != nil {
		t.Fatal(err)
	}
	used := make([]devices.Usage, 1)
	place := func(ann map[string]string, ctr corev1.Container) (*corev1.Pod, devices.Assignment, *devices.Rejection) {
		t.Helper()
		p := pod(ann, ctr)
		if ok, err := v.DefaultInPod(p, &p.Spec.Containers[0]); !ok || err != nil {
			t.Fatalf("DefaultInPod() = %v, %v", ok, err)
		}
		req, err := v.ParsePod(p)
		if err != nil {
			t.Fatal(err)
		}
		a, rej := v.Fit(cards, used, &req)
		return p, a, rej
	}
	annotations := func(p *corev1.Pod, a devices.Assignment) map[string]string {
		t.Helper()
		got := map[string]string{SGPUToAllocateAnnotation: devices.EncodeAssignment(a), SGPUAllocatedAnnotation: devices.EncodeAssignment(a)}
		extras, err := v.AssignmentExtras(p, a, time.Unix(1700000000, 5))
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(got, extras)
		return got
	}
	hold := func(a devices.Assignment) { devices.ApplyGrants(cards, used, a, 0, true) }

	// offline.yaml: the webhook adds best-effort; 4 GiB and 60 cores.
	off, a, rej := place(map[string]string{AppClassAnnotation: Offline}, offlineCtr)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if off.Annotations[QoSPolicyAnnotation] != BestEffort {
		t.Errorf("offline QoS = %q, want best-effort", off.Annotations[QoSPolicyAnnotation])
	}
	want := map[string]string{
		"hami.io/metax-sgpu-devices-to-allocate": "GPU-36be,Metax-SGPU,4096,60:;",
		"hami.io/metax-sgpu-devices-allocated":   "GPU-36be,Metax-SGPU,4096,60:;",
		"metax-tech.com/gpu-devices-allocated":   `[[{"uuid":"GPU-36be","compute":60,"vRam":4096}]]`,
		"metax-tech.com/predicate-time":          "1700000000000000005",
	}
	if got := annotations(off, a); !reflect.DeepEqual(got, want) {
		t.Errorf("offline annotations = %v, want %v", got, want)
	}
	if v.pending["GPU-36be"] != BestEffort {
		t.Errorf("offline pending QoS = %q, want best-effort", v.pending["GPU-36be"])
	}
	hold(a)

	// A pod without app class cannot join the offline work.
	if _, _, rej := place(nil, plainCtr); rej == nil {
		t.Error("pod without app class joined offline work")
	}

	// online.yaml: no QoS policy, 4 GiB, 0 cores, compute left out.
	delete(v.pending, "GPU-36be")
	on, a, rej := place(map[string]string{AppClassAnnotation: Online}, onlineCtr)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if _, ok := on.Annotations[QoSPolicyAnnotation]; ok {
		t.Errorf("online pod got a QoS policy: %v", on.Annotations)
	}
	want = map[string]string{
		"hami.io/metax-sgpu-devices-to-allocate": "GPU-36be,Metax-SGPU,4096,0:;",
		"hami.io/metax-sgpu-devices-allocated":   "GPU-36be,Metax-SGPU,4096,0:;",
		"metax-tech.com/gpu-devices-allocated":   `[[{"uuid":"GPU-36be","vRam":4096}]]`,
		"metax-tech.com/predicate-time":          "1700000000000000005",
	}
	if got := annotations(on, a); !reflect.DeepEqual(got, want) {
		t.Errorf("online annotations = %v, want %v", got, want)
	}
	if _, ok := v.pending["GPU-36be"]; ok {
		t.Errorf("online pod left a pending QoS: %v", v.pending)
	}
	hold(a)
	if want := []devices.Usage{{Sharers: 2, MemoryMiB: 8192, Cores: 60, Online: 1, Offline: 1}}; !reflect.DeepEqual(used, want) {
		t.Errorf("usage = %+v, want %+v", used, want)
	}

	// With online work on the card, a second offline pod cannot join; a
	// second online pod can.
	if _, _, rej := place(map[string]string{AppClassAnnotation: Offline}, limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vcore", "10", "metax-tech.com/vmemory", "4")); rej == nil {
		t.Error("offline pod joined online work")
	}
	if _, _, rej := place(map[string]string{AppClassAnnotation: Online}, onlineCtr); rej != nil {
		t.Errorf("second online pod: %s", rej.Reason())
	}
}

// BenchmarkSGPUFitAppClasses places an online pod on an 8-card node, half
// running online and offline pods.
func BenchmarkSGPUFitAppClasses(b *testing.B) {
	v := mustSGPU(b, SGPUConfig{})
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = sgpu("GPU-"+string(rune('a'+i)), 1+i/4, BestEffort)
		if i%2 == 0 {
			used[i] = mixedWork
		}
	}
	req, err := v.ParsePod(pod(onlineAnn, onlineCtr))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := v.Fit(cards, used, &req); rej != nil {
			b.Fatal(rej.Reason())
		}
	}
}
