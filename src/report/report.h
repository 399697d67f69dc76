/* report.h: what report.c and report-json.c share: the rate figures and the JSON line. */
#ifndef REPORT_H
#define REPORT_H

#include "fastcat.h"

/* report.c */
double report_flow_seconds(const struct flow_stats *, double);
double report_flow_rate(const struct flow_stats *, double);

/* report-json.c */
void report_print_json(const struct session *, int, int, int, double);

#endif
