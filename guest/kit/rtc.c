/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rtc.elf: reads the CMOS real-time clock like a careful OS (waits for the
 * update-in-progress flag to clear, reads twice until stable, honours the
 * BCD and 12/24-hour bits of status B) and compares it with now=<unix
 * seconds> from the command line: within 5 s passes.
 */
#include "kit.h"

#define RTC_SEC		0x00
#define RTC_MIN		0x02
#define RTC_HOUR	0x04
#define RTC_DAY		0x07
#define RTC_MONTH	0x08
#define RTC_YEAR	0x09
#define RTC_STATUS_A	0x0a
#define RTC_STATUS_B	0x0b
#define RTC_STATUS_D	0x0d
#define RTC_CENTURY	0x32

#define STA_UIP		0x80
#define STB_24H		0x02
#define STB_BINARY	0x04
#define STD_VRT		0x80

struct rtc_time {
	uint8_t sec, min, hour, day, month, year, century, status_b;
};

static uint8_t cmos_read(uint8_t reg)
{
	outb(KIT_PORT_RTC, reg);
	return inb(KIT_PORT_RTC + 1);
}

static bool wait_not_updating(void)
{
	uint64_t deadline = kit_now_us() + 1500000;

	while (cmos_read(RTC_STATUS_A) & STA_UIP) {
		if (kit_now_us() > deadline)
			return false;
		cpu_relax();
	}
	return true;
}

static void read_raw(struct rtc_time *t)
{
	t->sec = cmos_read(RTC_SEC);
	t->min = cmos_read(RTC_MIN);
	t->hour = cmos_read(RTC_HOUR);
	t->day = cmos_read(RTC_DAY);
	t->month = cmos_read(RTC_MONTH);
	t->year = cmos_read(RTC_YEAR);
	t->century = cmos_read(RTC_CENTURY);
	t->status_b = cmos_read(RTC_STATUS_B);
}

static unsigned int bcd(uint8_t v)
{
	return (v >> 4) * 10 + (v & 0xf);
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, unsigned int m, unsigned int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

KIT_TEST(rtc)
{
	struct rtc_time a, b;
	unsigned int sec, min, hour, day, month, year, century;
	bool binary, h24, pm;
	int64_t epoch;
	int tries;

	for (tries = 0; tries < 10; tries++) {
		if (!kit_check(wait_not_updating(),
			       "RTC update-in-progress never cleared"))
			break;
		read_raw(&a);
		read_raw(&b);
		if (!memcmp(&a, &b, sizeof(a)))
			break;
	}
	kit_check(tries < 10, "RTC reads never agreed twice in a row");
	kit_check(cmos_read(RTC_STATUS_D) & STD_VRT,
		  "RTC status D says the time is not valid");

	binary = a.status_b & STB_BINARY;
	h24 = a.status_b & STB_24H;
	pm = !h24 && (a.hour & 0x80);
	a.hour &= 0x7f;
	sec = binary ? a.sec : bcd(a.sec);
	min = binary ? a.min : bcd(a.min);
	hour = binary ? a.hour : bcd(a.hour);
	day = binary ? a.day : bcd(a.day);
	month = binary ? a.month : bcd(a.month);
	year = binary ? a.year : bcd(a.year);
	century = binary ? a.century : bcd(a.century);
	if (!h24)
		hour = hour % 12 + (pm ? 12 : 0);
	if (century < 19 || century > 21) {
		kit_printf("century register %#x unusable, assuming 20\n",
			   a.century);
		century = 20;
	}
	year += century * 100;

	kit_printf("rtc: %u-%02u-%02u %02u:%02u:%02u (status B %#x: %s, %s)\n",
		   year, month, day, hour, min, sec, a.status_b,
		   binary ? "binary" : "BCD", h24 ? "24h" : "12h");
	kit_check(sec < 60 && min < 60 && hour < 24, "time %u:%u:%u invalid",
		  hour, min, sec);
	kit_check(day >= 1 && day <= 31 && month >= 1 && month <= 12,
		  "date %u-%u invalid", month, day);

	epoch = days_from_civil(year, month, day) * 86400 + hour * 3600 +
		min * 60 + sec;
	if (kit_cmdline_has("now")) {
		int64_t now = (int64_t)kit_cmdline_u64("now", 0);
		int64_t diff = epoch - now;

		kit_printf("rtc epoch %ld, host now=%ld, difference %ld s\n",
			   epoch, now, diff);
		kit_check(diff >= -5 && diff <= 5,
			  "RTC is %ld s away from now=%ld", diff, now);
	} else {
		kit_printf("rtc epoch %ld (no now= given: not compared)\n",
			   epoch);
	}
}
