package devices

// DefaultSplitCount is HAMi's deviceSplitCount when the device config
// sets none: how many containers may share one card.
const DefaultSplitCount = 10

// SplitCounts is, per vendor name, how many containers may share one of
// its cards that no device plugin registers (a DRA driver's, which sets
// no such bound): the vendor's deviceSplitCount (configs are
// index-aligned with vendors), as its device plugin would register the
// card; DefaultSplitCount otherwise.
func SplitCounts(vendors []Vendor, configs []Config) func(vendor string) int32 {
	counts := map[string]int32{}
	for i, v := range vendors {
		counts[v.Name()] = DefaultSplitCount
		if i < len(configs) && configs[i].NodeDefaults.SplitCount > 0 {
			counts[v.Name()] = configs[i].NodeDefaults.SplitCount
		}
	}
	return func(vendor string) int32 {
		if n, ok := counts[vendor]; ok {
			return n
		}
		return DefaultSplitCount
	}
}
