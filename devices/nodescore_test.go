package devices

import "testing"

func TestNodeTallyScore(t *testing.T) {
	card := Card{Split: 10, MemoryMiB: 10000, Cores: 100}
	tests := []struct {
		name  string
		cards []Card
		used  []Usage
		want  float32
	}{
		{"idle", []Card{card}, []Usage{{}}, 0},
		{"full", []Card{card}, []Usage{{Sharers: 10, MemoryMiB: 10000, Cores: 100}}, 30},
		// Sums over the node's cards, not a mean of per-card ratios:
		// 10 x (2/20 + 50/200 + 5000/20000).
		{"two cards, one used", []Card{card, card}, []Usage{{Sharers: 2, MemoryMiB: 5000, Cores: 50}, {}}, 6},
		{"a zero total scores 0", []Card{{Split: 10, MemoryMiB: 10000}}, []Usage{{Sharers: 1, MemoryMiB: 5000}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tally NodeTally
			tally.Add(tt.cards, tt.used)
			if got := tally.Score(); got != tt.want {
				t.Errorf("Score() = %v, want %v", got, tt.want)
			}
		})
	}
}
