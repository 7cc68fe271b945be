//go:build tools

// Package contract holds nothing to run: the generated client that .ci/contract/run builds
// imports the module below, and this file keeps it (and its sums) in go.mod.
package contract

import _ "github.com/oapi-codegen/runtime"
