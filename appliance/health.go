package appliance

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Reasons /readyz gives for not being ready.
const (
	notReadyStartup      = "startup"
	notReadyDatabase     = "database"
	notReadyShuttingDown = "shutting_down"
)

// pingTimeout bounds the database check of one /readyz request.
const pingTimeout = 2 * time.Second

// healthHandler serves the internal listener: /healthz answers while the process runs,
// /readyz once the start is complete, the database answers and no shutdown has begun, and
// /metrics the metrics (unless telemetry.enabled is false). It is never on the public listener:
// health and metrics need no login and must not be public.
func (a *App) healthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeHealth(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if reason := a.state.Load().(string); reason != "" {
			writeHealth(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": reason})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), pingTimeout)
		defer cancel()
		if err := a.DB.Ping(ctx); err != nil {
			a.Logger.Warn("readiness: the database does not answer", "err", err)
			writeHealth(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": notReadyDatabase})
			return
		}
		writeHealth(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	// The metrics as Prometheus text, for a scraper on the internal network (observe.go).
	if a.telemetry != nil {
		mux.Handle("GET /metrics", a.telemetry.Handler())
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeHealth(w, http.StatusNotFound, map[string]string{"status": "not_found"})
	})
	return mux
}

func writeHealth(w http.ResponseWriter, status int, body map[string]string) {
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
