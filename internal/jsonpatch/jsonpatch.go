// Package jsonpatch holds what the plugin's RFC 6902 patches are made of:
// the pod patch PreBind writes and the vendor node locks, both guarded by
// "test" operations.
package jsonpatch

import "strings"

// Op is one RFC 6902 operation. Value is always written: a test against
// null checks that the path is absent.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// escaper escapes an RFC 6901 reference token.
var escaper = strings.NewReplacer("~", "~0", "/", "~1")

// Token escapes a map key (an annotation or label key) as a JSON pointer's
// reference token.
func Token(key string) string { return escaper.Replace(key) }

// Annotation is the JSON pointer of an object's annotation.
func Annotation(key string) string { return "/metadata/annotations/" + Token(key) }
