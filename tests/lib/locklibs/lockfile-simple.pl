#!/usr/bin/perl
# lockfile-simple.pl — drives LockFile::Simple (CPAN LockFile-Simple; Debian
# liblockfile-simple-perl).
#
#   lockfile-simple.pl [--hold S] LOCK ACTION [ARGS]
#
# LockFile::Simple checks that NAME.lock does not exist (-f), creates it
# with open(">") — O_CREAT|O_TRUNC, no O_EXCL — under umask 0333, writes
# "PID:HOST" (-nfs) and reads it back: ours if the content is our stamp.
# The check-then-create has a window on any file system (two processes of
# one uid can both pass -f); lockfs makes the create itself refuse a lock
# held through another mount.  With -hold S a contender unlinks a lock
# whose mtime is more than S seconds old.  Release checks the stamp and
# unlinks.  LOCK (NAME.lock) is passed as NAME.  Actions: see README.md.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use LocklibCommon;

BEGIN {
    eval { require LockFile::Simple; 1 } or do {
        print "error: LockFile::Simple is not installed: ", (split /\n/, $@)[0], "\n";
        exit 2;
    };
}

if (@ARGV == 1 && $ARGV[0] eq 'version') { print "LockFile::Simple $LockFile::Simple::VERSION\n"; exit 0 }
my $hold = 0;
while (@ARGV && $ARGV[0] =~ /^--/) {
    my ($opt, $val) = splice @ARGV, 0, 2;
    if ($opt eq '--hold') { $hold = $val } else { print "error: unknown option $opt\n"; exit 2 }
}
my $lockpath = shift @ARGV;
unless (defined $lockpath && $lockpath =~ /\.lock$/) {
    print "error: usage: lockfile-simple.pl [--hold S] NAME.lock ACTION\n";
    exit 2;
}
(my $file = $lockpath) =~ s/\.lock$//;
my @why;
my %common = (-nfs => 1, -hold => $hold, -stale => 0, -delay => 1, -autoclean => 0,
    -efunc => sub { push @why, "@_" }, -wfunc => sub { push @why, "@_" });

# One manager for the process: unlock() looks the lock up in the manager
# that took it.
my $mgr;
my $max = 1;
sub mgr { $mgr //= LockFile::Simple->make(%common, -max => $max) }

exit LocklibCommon::main(\@ARGV,
    attempt => sub { $max = 1; mgr()->configure(-max => 1); mgr()->trylock($file) ? 1 : 0 },
    # lock() retries every -delay (1) s, -max times.
    wait => sub { mgr()->configure(-max => int($_[0]) + 1); mgr()->lock($file) ? 1 : 0 },
    release => sub {
        @why = ();
        return mgr()->unlock($file) ? undef : (join('; ', @why) || 'unlock failed');
    },
);
