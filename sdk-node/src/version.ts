/** The version of this package: also its engine's and protocol's (the repository's VERSION file). */
export const VERSION = "0.1.0";
