package deviceconfig

import (
	"fmt"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v2"
)

// Load reads and decodes a device-config.yaml. It does not validate.
// ignored lists the keys HAMi would also ignore (unknown to its schema),
// for the caller to report.
func Load(path string) (cfg *Config, ignored []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read device config: %w", err)
	}
	return Parse(data)
}

// Parse decodes a device-config.yaml's contents as HAMi does: YAML v2,
// unknown keys ignored (and returned in ignored).
func Parse(data []byte) (cfg *Config, ignored []string, err error) {
	cfg = &Config{}
	if err := yaml.Unmarshal(data, cfg); err != nil {
		return nil, nil, fmt.Errorf("decode device config: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &Config{}); err != nil {
		ignored = unknownFields(err)
	}
	return cfg, ignored, nil
}

// unknownFields extracts the "line N: field X not found in type T" lines
// of a strict decoding error.
func unknownFields(err error) []string {
	var out []string
	for line := range strings.SplitSeq(err.Error(), "\n") {
		if line = strings.TrimSpace(line); strings.Contains(line, " not found in type ") {
			out = append(out, line)
		}
	}
	return out
}
