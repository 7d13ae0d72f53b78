/* Times short commands run in turn, one run of each after the other, so that
 * a machine whose speed drifts moves them all alike (hyperfine runs each
 * command's runs in one block). Each command is started with posix_spawn,
 * its output thrown away, and timed from the spawn to its reaping.
 *
 *   alternate RUNS WARMUP 'COMMAND 1' 'COMMAND 2' ...
 *
 * A command is split on spaces (no quoting). Prints a line per command:
 * its median, 10th and 90th percentile in milliseconds, and the median of
 * its ratio to the last command, taken run by run. Used by scripts/bench.sh. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

enum { most_commands = 8, most_words = 32 };

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double run_once(char **words, posix_spawn_file_actions_t *actions) {
    struct timespec start, end;
    pid_t child;
    int status;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (posix_spawn(&child, words[0], actions, NULL, words, environ) != 0) {
        fprintf(stderr, "alternate: cannot start %s\n", words[0]);
        exit(1);
    }
    waitpid(child, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &end);
    return (double)(end.tv_sec - start.tv_sec) * 1e3 + (double)(end.tv_nsec - start.tv_nsec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc - 3 > most_commands) {
        fprintf(stderr, "usage: alternate RUNS WARMUP 'COMMAND' ... (at most %d)\n", most_commands);
        return 64;
    }
    int runs = atoi(argv[1]), warmup = atoi(argv[2]), count = argc - 3;
    char *words[most_commands][most_words + 1];
    for (int c = 0; c < count; c++) {
        int n = 0;
        for (char *word = strtok(strdup(argv[c + 3]), " "); word && n < most_words; word = strtok(NULL, " ")) words[c][n++] = word;
        words[c][n] = NULL;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    double *times = calloc((size_t)runs * count, sizeof(double)), *ratios = calloc((size_t)runs * count, sizeof(double));
    for (int w = 0; w < warmup; w++)
        for (int c = 0; c < count; c++) run_once(words[c], &actions);
    for (int r = 0; r < runs; r++) {
        for (int c = 0; c < count; c++) times[c * runs + r] = run_once(words[c], &actions);
        for (int c = 0; c < count; c++) ratios[c * runs + r] = times[c * runs + r] / times[(count - 1) * runs + r];
    }
    for (int c = 0; c < count; c++) {
        double *own = times + c * runs, *ratio = ratios + c * runs;
        qsort(own, runs, sizeof(double), ascending);
        qsort(ratio, runs, sizeof(double), ascending);
        printf("%.3f %.3f %.3f %.3f\n", own[runs / 2], own[runs / 10], own[runs * 9 / 10], ratio[runs / 2]);
    }
    return 0;
}
