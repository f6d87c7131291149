//go:build tools

// Package tools pins h2spec (the HTTP/2 conformance checker) for test/conformance/h2spec.test.ts,
// which builds it with `go build github.com/summerwind/h2spec/cmd/h2spec` in this module.
package tools

import (
	_ "github.com/spf13/cobra" // the command's own dependency (h2spec has no go.mod of its own)
	_ "github.com/summerwind/h2spec"
)
