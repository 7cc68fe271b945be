# bothy: build, run, test and measure the single binary.
# `make test` is what CI runs (through .ci/run); `make run` starts a local instance in ./bothy-data.

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X bothy.dev/bothy/appliance.Version=$(VERSION)

.PHONY: build run test bench fmt lint generate contract dist

# The platforms of a release: GOOS/GOARCH, and for 32-bit ARM the GOARM level after a third slash.
DIST_PLATFORMS := linux/amd64 linux/arm64 linux/arm/7 darwin/arm64 windows/amd64

## build: compile ./bothy with the version stamped in
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bothy .

## dist: static binaries for every release platform in dist/ (bothy-VERSION-OS-ARCH[.exe]) and
## their SHA256SUMS; pure Go (CGO_ENABLED=0), two builds at a time
dist:
	rm -rf dist && mkdir -p dist
	printf '%s\n' $(DIST_PLATFORMS) | xargs -P 2 -n 1 sh -c '\
	  set -e; os=$${1%%/*}; rest=$${1#*/}; arch=$${rest%%/*}; arm=; name=$$arch; ext=; \
	  case $$rest in */*) arm=$${rest#*/}; name=$${arch}v$$arm ;; esac; \
	  [ "$$os" = windows ] && ext=.exe; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOARM=$$arm $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
	    -o dist/bothy-$(VERSION)-$$os-$$name$$ext . && echo "dist: $$os/$$arch$${arm:+/v$$arm}"' sh
	cd dist && sha256sum bothy-* > SHA256SUMS

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
