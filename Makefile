# bothy: build, run, test and measure the single binary.
# `make test` is what CI runs (through .ci/run); `make run` starts a local instance in ./bothy-data.

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X bothy.dev/bothy/appliance.Version=$(VERSION)

.PHONY: build run test bench fmt lint generate contract

## build: compile ./bothy with the version stamped in
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bothy .

## run: build and start a local server (data in ./bothy-data, public 127.0.0.1:8080)
run: build
	./bothy serve

## test: vet and run every test with the race detector, in random order, uncached
test:
	$(GO) vet ./... && $(GO) test -race -shuffle=on -count=1 ./...

## bench: run every benchmark and print target vs measured (see bench/run)
bench:
	bash bench/run

## generate: regenerate the console's templ components (ui/**/*_templ.go, committed)
generate:
	$(GO) tool templ generate -path ui

## fmt: format every Go file
fmt:
	gofmt -w $$(git ls-files '*.go')

## contract: lint the OpenAPI document (Redocly CLI) and compile a Go client generated from it (oapi-codegen)
contract:
	bash .ci/contract/run

## lint: fail on unformatted Go files, then vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed in:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
