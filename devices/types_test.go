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

func TestApplyGrants(t *testing.T) {
	cards := []Card{{UUID: "GPU-0"}, {UUID: "GPU-1"}}
	a := Assignment{nil, {{UUID: "GPU-1", MemoryMiB: 100, Cores: 10}, {UUID: "GPU-elsewhere", MemoryMiB: 5}}, {{UUID: "GPU-1", MemoryMiB: 50}}}
	used := make([]Usage, 2)
	ApplyGrants(cards, used, a, true)
	if want := []Usage{{}, {Sharers: 2, MemoryMiB: 150, Cores: 10}}; used[0] != want[0] || used[1] != want[1] {
		t.Fatalf("after add: %v, want %v", used, want)
	}
	ApplyGrants(cards, used, a, false)
	if used[0] != (Usage{}) || used[1] != (Usage{}) {
		t.Errorf("after remove: %v, want zero", used)
	}
}
