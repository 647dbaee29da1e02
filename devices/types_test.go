package devices

import "testing"

func TestUsageAddSub(t *testing.T) {
	tests := []struct {
		name  string
		start Usage
		add   []Grant
		sub   []Grant
		want  Usage
	}{
		{
			name: "add two grants",
			add:  []Grant{{MemoryMiB: 1000, Cores: 10}, {MemoryMiB: 500, Cores: 30}},
			want: Usage{Sharers: 2, MemoryMiB: 1500, Cores: 40},
		},
		{
			name:  "add then sub",
			start: Usage{Sharers: 1, MemoryMiB: 100, Cores: 5},
			add:   []Grant{{MemoryMiB: 1000, Cores: 10}},
			sub:   []Grant{{MemoryMiB: 1000, Cores: 10}},
			want:  Usage{Sharers: 1, MemoryMiB: 100, Cores: 5},
		},
		{
			name: "app classes counted per grant",
			add:  []Grant{{MemoryMiB: 10, Class: AppClassOnline}, {MemoryMiB: 10, Class: AppClassOnline}, {Cores: 60, Class: AppClassOffline}, {Cores: 5}},
			want: Usage{Sharers: 4, MemoryMiB: 20, Cores: 65, Online: 2, Offline: 1},
		},
		{
			name:  "app classes removed with their grants, never below zero",
			start: Usage{Sharers: 3, Online: 1, Offline: 1},
			sub:   []Grant{{Class: AppClassOnline}, {Class: AppClassOnline}, {}},
			want:  Usage{Offline: 1},
		},
		{
			name:  "sub never goes below zero",
			start: Usage{Sharers: 1, MemoryMiB: 100, Cores: 5},
			sub:   []Grant{{MemoryMiB: 1000, Cores: 10}, {MemoryMiB: 1, Cores: 1}},
			want:  Usage{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.start
			for _, g := range tt.add {
				u.Add(g)
			}
			for _, g := range tt.sub {
				u.Sub(g)
			}
			if u != tt.want {
				t.Errorf("usage = %+v, want %+v", u, tt.want)
			}
		})
	}
}

func TestRequestMemoryOn(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		card Card
		want int32
	}{
		{name: "MiB wins over percent", req: Request{Count: 1, MemoryMiB: 3000, MemoryPercent: 50}, card: Card{MemoryMiB: 16000}, want: 3000},
		{name: "percent of the card", req: Request{Count: 1, MemoryPercent: 50}, card: Card{MemoryMiB: 15360}, want: 7680},
		{name: "whole card", req: Request{Count: 1, MemoryPercent: 100}, card: Card{MemoryMiB: 15360}, want: 15360},
		{name: "rounds down", req: Request{Count: 1, MemoryPercent: 33}, card: Card{MemoryMiB: 100}, want: 33},
		{name: "no overflow on large cards", req: Request{Count: 1, MemoryPercent: 100}, card: Card{MemoryMiB: 2147483647}, want: 2147483647},
		{name: "nothing asked", req: Request{Count: 1}, card: Card{MemoryMiB: 15360}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.req.MemoryOn(&tt.card); got != tt.want {
				t.Errorf("MemoryOn() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPodRequestIsZero(t *testing.T) {
	tests := []struct {
		name string
		req  PodRequest
		want bool
	}{
		{name: "no container", req: PodRequest{}, want: true},
		{name: "containers asking nothing", req: PodRequest{Containers: []Request{{}, {MemoryMiB: 100}}}, want: true},
		{name: "one container asking", req: PodRequest{Containers: []Request{{}, {Count: 1}}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.req.IsZero(); got != tt.want {
				t.Errorf("IsZero() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPreferencesWantsUUID(t *testing.T) {
	tests := []struct {
		name string
		p    Preferences
		want bool
	}{
		{name: "no uuid lists", want: true},
		{name: "named in use", p: Preferences{UseUUIDs: []string{"GPU-0", "GPU-1"}}, want: true},
		{name: "not named in use", p: Preferences{UseUUIDs: []string{"GPU-0"}}, want: false},
		{name: "a prefix is not a name", p: Preferences{UseUUIDs: []string{"GPU"}}, want: false},
		{name: "named in avoid", p: Preferences{AvoidUUIDs: []string{"GPU-1"}}, want: false},
		{name: "another card avoided", p: Preferences{AvoidUUIDs: []string{"GPU-0"}}, want: true},
		{name: "named in both", p: Preferences{UseUUIDs: []string{"GPU-1"}, AvoidUUIDs: []string{"GPU-1"}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.WantsUUID("GPU-1"); got != tt.want {
				t.Errorf("WantsUUID(GPU-1) = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestApplyGrants(t *testing.T) {
	g := func(id string, mem, cores int32) Grant {
		return Grant{UUID: id, Vendor: "NVIDIA", MemoryMiB: mem, Cores: cores}
	}
	cards := []Card{{UUID: "GPU-0"}, {UUID: "GPU-1"}}
	tests := []struct {
		name  string
		a     Assignment
		inits int
		want  []Usage
	}{
		{
			name: "regular containers sum; unknown cards ignored",
			a:    Assignment{nil, {g("GPU-1", 100, 10), g("GPU-elsewhere", 5, 0)}, {g("GPU-1", 50, 0)}},
			want: []Usage{{}, {Sharers: 2, MemoryMiB: 150, Cores: 10}},
		},
		{
			name:  "init containers count their largest grant once",
			a:     Assignment{{g("GPU-0", 300, 10)}, {g("GPU-0", 500, 5)}, nil},
			inits: 2,
			want:  []Usage{{Sharers: 1, MemoryMiB: 500, Cores: 10}, {}},
		},
		{
			name:  "init peak above the regular sum wins per field",
			a:     Assignment{{g("GPU-0", 3000, 5)}, {g("GPU-0", 1000, 20)}, {g("GPU-0", 1000, 20)}},
			inits: 1,
			want:  []Usage{{Sharers: 2, MemoryMiB: 3000, Cores: 40}, {}},
		},
		{
			name:  "regular sum above the init peak wins",
			a:     Assignment{{g("GPU-0", 1000, 50)}, {g("GPU-0", 1500, 30)}, {g("GPU-0", 1500, 30)}},
			inits: 1,
			want:  []Usage{{Sharers: 2, MemoryMiB: 3000, Cores: 60}, {}},
		},
		{
			name:  "init and regular on different cards",
			a:     Assignment{{g("GPU-0", 1000, 50)}, {g("GPU-1", 200, 0)}},
			inits: 1,
			want:  []Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 50}, {Sharers: 1, MemoryMiB: 200}},
		},
		{
			name:  "inits 0 sums the init entries as regular ones",
			a:     Assignment{{g("GPU-0", 1000, 50)}, {g("GPU-0", 200, 0)}},
			inits: 0,
			want:  []Usage{{Sharers: 2, MemoryMiB: 1200, Cores: 50}, {}},
		},
		{
			name:  "inits beyond the entries: all are init",
			a:     Assignment{{g("GPU-0", 1000, 50)}, {g("GPU-0", 200, 0)}},
			inits: 5,
			want:  []Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 50}, {}},
		},
		{
			name:  "regular only after the init containers finished",
			a:     Assignment{{g("GPU-0", 3000, 90)}, {g("GPU-0", 1000, 20)}}.Regular(1),
			inits: 0,
			want:  []Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 20}, {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := Usage{Sharers: 1, MemoryMiB: 7, Cores: 3}
			used := []Usage{base, base}
			ApplyGrants(cards, used, tt.a, tt.inits, true)
			for i := range used {
				want := tt.want[i]
				want.plus(base)
				if used[i] != want {
					t.Errorf("after add, card %d: %+v, want %+v", i, used[i], want)
				}
			}
			ApplyGrants(cards, used, tt.a, tt.inits, false)
			if used[0] != base || used[1] != base {
				t.Errorf("after remove: %+v, want %+v twice", used, base)
			}
		})
	}
}

// TestApplyGrantsAppClasses: the class counters follow the sharers,
// init containers collapsed included, and removing cancels adding.
func TestApplyGrantsAppClasses(t *testing.T) {
	on := func(id string) Grant { return Grant{UUID: id, MemoryMiB: 100, Class: AppClassOnline} }
	off := func(id string) Grant { return Grant{UUID: id, Cores: 10, Class: AppClassOffline} }
	cards := []Card{{UUID: "GPU-0"}, {UUID: "GPU-1"}}
	for _, tt := range []struct {
		name  string
		a     Assignment
		inits int
		want  []Usage
	}{
		{"one online pod, two grants on a card", Assignment{{on("GPU-0")}, {on("GPU-0"), on("GPU-1")}}, 0,
			[]Usage{{Sharers: 2, MemoryMiB: 200, Online: 2}, {Sharers: 1, MemoryMiB: 100, Online: 1}}},
		{"offline pod", Assignment{{off("GPU-1")}}, 0, []Usage{{}, {Sharers: 1, Cores: 10, Offline: 1}}},
		{"init container alone on a card counts once", Assignment{{on("GPU-0")}, {on("GPU-0")}, {on("GPU-1")}}, 2,
			[]Usage{{Sharers: 1, MemoryMiB: 100, Online: 1}, {Sharers: 1, MemoryMiB: 100, Online: 1}}},
		{"init and regular on one card: the regular count", Assignment{{off("GPU-0")}, {off("GPU-0")}, {off("GPU-0")}}, 1,
			[]Usage{{Sharers: 2, Cores: 20, Offline: 2}, {}}},
		{"no class", Assignment{{{UUID: "GPU-0"}}}, 0, []Usage{{Sharers: 1}, {}}},
	} {
		used := make([]Usage, 2)
		ApplyGrants(cards, used, tt.a, tt.inits, true)
		if used[0] != tt.want[0] || used[1] != tt.want[1] {
			t.Errorf("%s: after add %+v, want %+v", tt.name, used, tt.want)
		}
		ApplyGrants(cards, used, tt.a, tt.inits, false)
		if used[0] != (Usage{}) || used[1] != (Usage{}) {
			t.Errorf("%s: after remove %+v", tt.name, used)
		}
	}
}

// TestAssignmentWithClass: WithClass stamps every grant, and the wire
// format does not carry the class.
func TestAssignmentWithClass(t *testing.T) {
	a := Assignment{nil, {{UUID: "GPU-0", Vendor: "Metax-SGPU", MemoryMiB: 4096}}, {{UUID: "GPU-1", Vendor: "Metax-SGPU", MemoryMiB: 4096, Cores: 60}, {UUID: "GPU-2"}}}
	before := EncodeAssignment(a)
	a.WithClass(AppClassOffline)
	a.Grants(func(g Grant) {
		if g.Class != AppClassOffline {
			t.Errorf("grant %s: class %d", g.UUID, g.Class)
		}
	})
	if got := EncodeAssignment(a); got != before {
		t.Errorf("EncodeAssignment() = %q, want %q", got, before)
	}
	decoded, err := DecodeAssignment(before)
	if err != nil {
		t.Fatal(err)
	}
	decoded.Grants(func(g Grant) {
		if g.Class != AppClassNone {
			t.Errorf("decoded grant %s has class %d", g.UUID, g.Class)
		}
	})
}

func TestApplyGrantsRemoveStopsAtZero(t *testing.T) {
	cards := []Card{{UUID: "GPU-0"}}
	used := []Usage{{Sharers: 1, MemoryMiB: 100, Cores: 10}}
	ApplyGrants(cards, used, Assignment{{{UUID: "GPU-0", MemoryMiB: 500, Cores: 50}, {UUID: "GPU-0", MemoryMiB: 1}}}, 0, false)
	if used[0] != (Usage{}) {
		t.Errorf("got %+v, want zero", used[0])
	}
}

func TestAssignmentRegular(t *testing.T) {
	a := Assignment{{{UUID: "A"}}, nil, {{UUID: "B"}}}
	for _, tt := range []struct {
		inits int
		want  int
	}{{-1, 3}, {0, 3}, {1, 2}, {3, 0}, {4, 0}} {
		if got := len(a.Regular(tt.inits)); got != tt.want {
			t.Errorf("Regular(%d) has %d entries, want %d", tt.inits, got, tt.want)
		}
	}
}
