# A TAP::Harness for prove (prove --harness LockfsTally) that
#  - keeps going after a test file says "Bail out!" (GLib test binaries do so on the
#    first failed assertion): the rest of that file counts as failed through its
#    plan, and the next files still run;
#  - appends "PASSED FAILED SKIPPED" for the whole run to the file named by
#    $LOCKFS_TALLY, counted in test points:
#      passed   ok points, less the skipped ones (TODO points count as passed);
#      failed   not-ok points, plus the points a file planned but never ran (it died,
#               bailed out or was killed), and at least 1 for a file with any other
#               problem (no plan, non-zero exit, parse errors);
#      skipped  "ok # skip" points, and 1 for a file that skipped all ("1..0 # SKIP").
# Used by scripts/test, which adds the lines of every pass into its closing line.
package LockfsTally;

use strict;
use warnings;
use parent 'TAP::Harness';

sub _bailout {
	my ($self, $result, $parser, $session, $aggregate, $job) = @_;
	my $why = $result->explanation;
	print STDERR "\n", $job->description, ": Bail out!", ($why ? " $why" : ""),
	    " (the tests it did not run count as failed)\n";
	return;    # TAP::Harness's own _bailout dies and stops the whole run
}

sub runtests {
	my ($self, @tests) = @_;
	my $aggregate = $self->SUPER::runtests(@tests);
	my ($passed, $failed, $skipped) = (0, 0, 0);
	for my $description ($aggregate->descriptions) {
		my ($p) = $aggregate->parsers($description);
		if ($p->skip_all) {
			$skipped++;
			next;
		}
		my $skip = () = $p->skipped;
		my $ok = () = $p->passed;
		my $bad = () = $p->failed;
		my $planned = $p->tests_planned;
		$bad += $planned - $p->tests_run if defined $planned && $planned > $p->tests_run;
		$bad = 1 if $bad == 0 && $p->has_problems;
		$passed += $ok - $skip;
		$failed += $bad;
		$skipped += $skip;
	}
	if (my $file = $ENV{LOCKFS_TALLY}) {
		open(my $fh, '>>', $file) or die "LockfsTally: cannot write $file: $!\n";
		print $fh "$passed $failed $skipped\n";
		close($fh) or die "LockfsTally: cannot write $file: $!\n";
	}
	return $aggregate;
}

1;
