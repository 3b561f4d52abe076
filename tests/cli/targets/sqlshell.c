/* SPDX-License-Identifier: MIT */
/*
 * tgt_sqlshell: the little of Debian's sqlite3 shell that the case
 * filter_sqlite3 uses, for an architecture whose sqlite3 program is not
 * installed (its libsqlite3 is): each line of stdin is one statement,
 * prepared with sqlite3_prepare_v2 on an in-memory database and stepped;
 * each row is printed, its columns separated by '|', as the shell does.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	char line[4096];
	sqlite3 *db;
	int rc = 0;

	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		sqlite3_stmt *st;
		int i;

		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		if (sqlite3_prepare_v2(db, line, -1, &st, NULL) != SQLITE_OK) {
			fprintf(stderr, "error: %s\n", sqlite3_errmsg(db));
			rc = 1;
			continue;
		}
		while (sqlite3_step(st) == SQLITE_ROW)
			for (i = 0; i < sqlite3_column_count(st); i++)
				printf("%s%s", (const char *)sqlite3_column_text(st, i),
				       i + 1 < sqlite3_column_count(st) ? "|" : "\n");
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return rc;
}
