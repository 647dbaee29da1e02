package plugins

import "encoding/json"

func jsonArgs(a *Args) ([]byte, error) { return json.Marshal(a) }
