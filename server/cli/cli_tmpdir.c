#include "cli/cli_tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_tmpdir_make(char *out, size_t cap, const char *what)
{
    const char *tmp = getenv("TMPDIR");
    if ((size_t)snprintf(out, cap, "%s/stacksift-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", what) >= cap) {
        out[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    if (mkdtemp(out) == NULL) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

void cli_tmpdir_remove(const char *dir)
{
    if (dir == NULL || dir[0] == '\0')
        return;
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[4200];
            if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= sizeof p)
                continue;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                cli_tmpdir_remove(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}
