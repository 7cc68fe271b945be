package storage

import (
	"context"
	"strings"
)

// UnreadPlans explains, on SQLite, the statements of UnreadCandidates for a principal who is
// not an owner: the detail lines of each one's EXPLAIN QUERY PLAN.
func UnreadPlans(ctx context.Context, db *DB) ([][]string, error) {
	var out [][]string
	for _, q := range []string{unreadMainSQL(false), unreadThreadsSQL} {
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = "p"
		}
		rows, err := db.q(ctx).QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			return nil, err
		}
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				rows.Close()
				return nil, err
			}
			lines = append(lines, detail)
		}
		rows.Close()
		out = append(out, lines)
	}
	return out, nil
}
