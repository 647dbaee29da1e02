// Package deviceconfig reads HAMi v2.10's device-config.yaml (the
// device-config.yaml key of HAMi's scheduler ConfigMap), so that a HAMi
// cluster keeps its device settings when it moves to hami-scheduler.
//
// The file is decoded as HAMi decodes it (YAML v2, unknown keys ignored,
// though reported), validated with field paths, and turned into the
// vendor settings of package devices. Sections of vendors this build does
// not implement are parsed and validated too, and reported once.
package deviceconfig
