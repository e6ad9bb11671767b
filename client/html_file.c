/* SPDX-License-Identifier: GPL-2.0-only */
/* html_file.c -- `--html FILE`: a pdimon JSON document rendered as one HTML page (lib/html)
 * with its graphs laid out by Graphviz here, in the CLI's process, and written to FILE whole
 * or not at all (a temporary file beside it, renamed), so that a reader never sees half a page
 * and an earlier report survives a full disk. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "file_replace.h"
#include "graphviz_svg.h"
#include "html.h"
#include "html_file.h"

static int write_whole(const char *path, const char *text)
{
	if (!strcmp(path, "-"))
		return pdi_write_all(STDOUT_FILENO, text, strlen(text));
	return pdi_file_replace(path, text, strlen(text), true);
}

/* A fresh nonce for the page's scripts: whoever named the program cannot guess it. */
static int make_nonce(char *buf, size_t len)
{
	unsigned char raw[16];

	if (len < 2 * sizeof(raw) + 1 || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(buf + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

int pdi_html_file_write(const char *doc, size_t len, const char *path)
{
	char nonce[40], why[PDI_HTML_WHY_LEN] = "", *page = NULL;
	struct pdi_html_env env = {.layout = pdi_graphviz_svg, .generator = "pdimon " PDI_VERSION, .nonce = nonce};
	int r;

	if (make_nonce(nonce, sizeof(nonce)) < 0) {
		fprintf(stderr, "pdimon: no random bytes for the page's nonce: %s\n", strerror(errno));
		return -EIO;
	}
	env.layout_ctx = pdi_graphviz_open();
	if (!env.layout_ctx)
		env.layout = NULL; /* the page says its graphs could not be drawn */
	r = pdi_html_render(doc, len, &env, &page, why);
	pdi_graphviz_close(env.layout_ctx);
	if (r < 0) {
		fprintf(stderr, "pdimon: cannot make an HTML page of this document: %s\n", why[0] ? why : strerror(-r));
		return r;
	}
	r = write_whole(path, page);
	free(page);
	if (r < 0)
		fprintf(stderr, "pdimon: cannot write %s: %s\n", path, strerror(-r));
	return r;
}
