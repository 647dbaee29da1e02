package handover

import (
	"testing"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

func TestRankByQueue(t *testing.T) {
	tests := []struct {
		name string
		// in: node -> score in range, rounds.
		in   map[string][2]int64
		want map[string]int64
	}{
		{name: "fewest rounds on top, score order inside each round",
			in:   map[string][2]int64{"a": {90, 1}, "b": {10, 0}, "c": {60, 0}, "d": {100, 2}},
			want: map[string]int64{"c": 80, "b": 55, "a": 22, "d": 16}},
		{name: "every node queued: rounds count from the fewest",
			in:   map[string][2]int64{"a": {0, 3}, "b": {100, 4}},
			want: map[string]int64{"a": 50, "b": 25}},
		{name: "no queue anywhere: the scores, as without a limit",
			in:   map[string][2]int64{"a": {0, 0}, "b": {100, 0}, "c": {37, 0}},
			want: map[string]int64{"a": 0, "b": 100, "c": 37}},
		{name: "every node equally queued: the scores",
			in:   map[string][2]int64{"a": {30, 2}, "b": {70, 2}},
			want: map[string]int64{"a": 30, "b": 70}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var scores fwk.NodeScoreList
			for name, v := range tt.in {
				scores = append(scores, fwk.NodeScore{Name: name, Score: v[0]})
			}
			RankByQueue(scores, func(node string) int { return int(tt.in[node][1]) })
			for _, s := range scores {
				if s.Score != tt.want[s.Name] || s.Score < 0 || s.Score > fwk.MaxNodeScore {
					t.Errorf("%s: %d, want %d", s.Name, s.Score, tt.want[s.Name])
				}
			}
		})
	}
}
