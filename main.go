// Command bothy is the single binary of the bothy chat hub: `bothy serve` runs it, the other
// subcommands manage it. Everything happens in package appliance; main only hands over the
// arguments and exits with the code it gets back.
package main

import (
	"os"

	"bothy.dev/bothy/appliance"
)

func main() {
	os.Exit(appliance.Main(os.Args[1:], os.Stdout, os.Stderr))
}
